// The library's problems: one line per kernel family.
#include "kforge/problem.hpp"

namespace kforge {

std::shared_ptr<Problem> make_gemm_problem();
std::shared_ptr<Problem> make_scan_problem(const std::string& name);  // kernels/scan
std::shared_ptr<Problem> make_softmax_problem();
std::shared_ptr<Problem> make_rmsnorm_problem();
std::shared_ptr<Problem> make_layernorm_problem();
std::shared_ptr<Problem> make_activation_problem(const std::string& fn);
std::shared_ptr<Problem> make_reduce_problem(const std::string& op, int axis);
std::shared_ptr<Problem> make_attention_problem();
std::shared_ptr<Problem> make_attention_causal_problem();
std::shared_ptr<Problem> make_conv2d_problem();
std::shared_ptr<Problem> make_conv2d_nchw8c_problem();  // kernels/conv2d, channels blocked by 8
std::shared_ptr<Problem> make_conv2d_nchw8c_xplain_problem();  // the same, x plain (C < 8)
std::shared_ptr<Problem> make_cartpole_problem();                     // kernels/cartpole
std::shared_ptr<Problem> make_moe_problem();  // kernels/moe
std::shared_ptr<Problem> make_spmm_problem();   // kernels/sparse
std::shared_ptr<Problem> make_sddmm_problem();  // kernels/sparse
std::shared_ptr<Problem> make_spmm_bell_problem();  // kernels/sparse
std::shared_ptr<Problem> make_fusedmm_problem();  // kernels/sparse
std::shared_ptr<Problem> make_spmspv_problem();   // kernels/sparse
std::shared_ptr<Problem> make_gnn_aggregate_problem();  // kernels/sparse
std::shared_ptr<Problem> make_gnn_attention_problem();  // kernels/sparse
std::shared_ptr<Problem> make_spdnn_problem();  // kernels/sparse
std::shared_ptr<Problem> make_lazy_reduce_problem(const std::string& which);  // kernels/lazy_reduce
std::shared_ptr<Problem> make_signature_problem();  // kernels/signature
std::shared_ptr<Problem> make_sigkernel_problem();  // kernels/signature
std::shared_ptr<Problem> make_signature_grad_problem();  // kernels/signature
std::shared_ptr<Problem> make_sigkernel_grad_problem();  // kernels/signature
std::shared_ptr<Problem> make_sigkernel_gram_grad_problem();  // kernels/signature
std::shared_ptr<Problem> make_kernel_kmeans_problem();  // kernels/kernel_kmeans
std::shared_ptr<Problem> make_kernel_svm_problem();     // kernels/kernel_model
std::shared_ptr<Problem> make_kernel_logreg_problem();  // kernels/kernel_model

const std::vector<std::shared_ptr<Problem>>& problems() {
  static const std::vector<std::shared_ptr<Problem>> all = {
      make_gemm_problem(),
      make_scan_problem("scan.linear"),
      make_scan_problem("scan.linear_rev"),
      make_scan_problem("scan.discounted_return"),
      make_scan_problem("scan.gae"),
      make_scan_problem("scan.td_lambda"),
      make_scan_problem("scan.vtrace"),
      make_scan_problem("scan.retrace"),
      make_scan_problem("scan.tree_backup"),
      make_scan_problem("scan.nstep"),
      make_softmax_problem(),
      make_rmsnorm_problem(),
      make_layernorm_problem(),
      make_activation_problem("relu"),
      make_activation_problem("leaky_relu"),
      make_activation_problem("gelu_erf"),
      make_activation_problem("gelu_tanh"),
      make_activation_problem("silu"),
      make_reduce_problem("sum", 1),
      make_reduce_problem("sum", 0),
      make_reduce_problem("max", 1),
      make_reduce_problem("max", 0),
      make_reduce_problem("argmax", 1),
      make_reduce_problem("argmax", 0),
      make_attention_problem(),
      make_attention_causal_problem(),
      make_conv2d_problem(),
      make_conv2d_nchw8c_problem(),
      make_conv2d_nchw8c_xplain_problem(),
      make_cartpole_problem(),
      make_moe_problem(),
      make_spmm_problem(),
      make_sddmm_problem(),
      make_spmm_bell_problem(),
      make_fusedmm_problem(),
      make_spmspv_problem(),
      make_gnn_aggregate_problem(),
      make_gnn_attention_problem(),
      make_spdnn_problem(),
      make_lazy_reduce_problem("gauss_sum"),
      make_lazy_reduce_problem("logsumexp"),
      make_lazy_reduce_problem("knn"),
      make_lazy_reduce_problem("gauss_sum_grad"),
      make_lazy_reduce_problem("logsumexp_grad"),
      make_signature_problem(),
      make_sigkernel_problem(),
      make_signature_grad_problem(),
      make_sigkernel_grad_problem(),
      make_sigkernel_gram_grad_problem(),
      make_kernel_kmeans_problem(),
      make_kernel_svm_problem(),
      make_kernel_logreg_problem(),
  };
  return all;
}

}  // namespace kforge
