// sigkernel_gram_grad: the gradient of the signature kernel's Gram form. Two batches X (B1,L1,D)
// and Y (B2,L2,D), an upstream gradient G (B1,B2) on the Gram matrix K = sigkernel(X, Y):
//   GX_a = d/dx_a sum_{a,b} G_ab k(x_a, y_b) = sum_b G_ab dk(x_a, y_b)/dx_a,   GY_b likewise
// (README.md, "Kernel gradient, Gram form"). The loss of an MMD or a kernel score.
//
// A problem of its own rather than a form of sigkernel_grad: its sizes (B1, B2 against B) and
// its upstream tensor (a matrix against a vector) differ, so every tensor's shape does; the
// mathematics per pair is sigkernel_grad's, shared in sigkernel_adjoint.hpp.
//
// The reference runs the paired reference's exact adjoint (double, column by column) for every
// pair (a, b) with the weight G_ab and sums the pairs' gradients into GX_a and GY_b. Error scale:
// each pair's, plus the sum over the pairs (sigkernel_adjoint.hpp; reduction_length below).
#include <algorithm>
#include <cmath>
#include <mutex>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/structured_reconditioning.hpp"
#include "kforge/util.hpp"
#include "paths.hpp"
#include "sigkernel_adjoint.hpp"

namespace kforge {
namespace {

using namespace signature_paths;
using namespace sigkernel_adjoint;

class SigKernelGramGrad final : public Problem, public StructuredReconditioning {
 public:
  std::string name() const override { return "sigkernel_gram_grad"; }
  std::string description() const override {
    return "gradient of sum_{a,b} G_ab k(x_a, y_b) (the signature kernel's Gram matrix, sigkernel's PDE scheme) by "
           "the scheme's exact adjoint: X (B1,L1,D), Y (B2,L2,D), G (B1,B2) -> GX (B1,L1,D), GY (B2,L2,D)";
  }
  std::vector<std::string> size_names() const override { return {"B1", "B2", "L1", "L2", "D", "DYADIC"}; }
  Sizes default_sizes() const override {
    return {{"B1", 32}, {"B2", 32}, {"L1", 64}, {"L2", 64}, {"D", 4}, {"DYADIC", 0}};
  }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"Y", Role::in}, {"G", Role::in}, {"GX", Role::out}, {"GY", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {}; }
  Scalars scalars_for_trial(int) const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    if (t == 2) return s.at("B1") * s.at("B2");
    if (t == 0 || t == 3) return s.at("B1") * s.at("L1") * s.at("D");
    return s.at("B2") * s.at("L2") * s.at("D");
  }
  void check_sizes(const Sizes& s) const override {
    check_pde_sizes(s, kMaxGridNodes);
    check_int_abi("B1*L1*D", static_cast<double>(s.at("B1")) * s.at("L1") * s.at("D"));
    check_int_abi("B2*L2*D", static_cast<double>(s.at("B2")) * s.at("L2") * s.at("D"));
    check_int_abi("B1*B2", static_cast<double>(s.at("B1")) * s.at("B2"));
  }
  // Per pair the reference sweeps the fine grid three times and the coarse cells over D.
  double fuzz_work(const Sizes& s) const override {
    const double r = std::ldexp(1.0, 2 * static_cast<int>(std::min<std::int64_t>(s.at("DYADIC"), 30)));
    return static_cast<double>(s.at("B1")) * s.at("B2") * s.at("L1") * s.at("L2") * (3 * r + s.at("D"));
  }
  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    const std::int64_t D = inst.sizes.at("D");
    scale_paths(inst.tensors[0], inst.sizes.at("B1"), inst.sizes.at("L1"), D, 2.0);
    scale_paths(inst.tensors[1], inst.sizes.at("B2"), inst.sizes.at("L2"), D, 2.0);
  }
  // Structured inputs on the paths X and Y as sigkernel's (kernels/signature/problem.cpp, SigKernel);
  // the cotangents G stay as drawn.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {s.at("L1") * s.at("D"), s.at("L2") * s.at("D"), -1, -1, -1};
  }
  void recondition_structured(Instance& inst) const override { condition_inputs(inst, 0, 0); }

  // A pair's chain (pair_reduction_length) and the sum over the pairs: GX_a sums B2 pairs' point
  // gradients, GY_b B1 pairs'. The kernels sum each pair's gradient first and add it to the
  // point's accumulator (nested sums: the chains add), so max(B1, B2) more roundings at most.
  double reduction_length(const Sizes& s) const override {
    return pair_reduction_length(s.at("L1"), s.at("L2"), s.at("D"), s.at("DYADIC")) +
           static_cast<double>(std::max(s.at("B1"), s.at("B2")));
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t B1 = in.sizes.at("B1"), B2 = in.sizes.at("B2"), L1 = in.sizes.at("L1"), L2 = in.sizes.at("L2"),
                       D = in.sizes.at("D");
    const int lambda = static_cast<int>(in.sizes.at("DYADIC"));
    const Chains ch = chains_for(reduction_length(in.sizes), D);
    const std::size_t nx = static_cast<std::size_t>(L1 * D), ny = static_cast<std::size_t>(L2 * D);
    std::vector<double> gx(B1 * nx, 0.0), gy(B2 * ny, 0.0), mx(gx.size(), 0.0), my(gy.size(), 0.0);
    std::mutex merge;
    // Rows a split over threads: GX_a is the range's own; GY gathers each range's sum.
    parallel_for(B1, [&](std::int64_t a0, std::int64_t a1) {
      PairGrad r;
      std::vector<double> ly(gy.size(), 0.0), lm(gy.size(), 0.0);
      for (std::int64_t a = a0; a < a1; ++a)
        for (std::int64_t b = 0; b < B2; ++b) {
          pair_gradient(&in.tensors[0][a * nx], &in.tensors[1][b * ny], L1, L2, D, lambda, in.tensors[2][a * B2 + b], ch, r);
          // Each pair's error scale, and the pair's sum itself for the sum over the pairs.
          for (std::size_t e = 0; e < nx; ++e) gx[a * nx + e] += r.gx[e], mx[a * nx + e] += r.mx[e] + std::fabs(r.gx[e]);
          for (std::size_t e = 0; e < ny; ++e) ly[b * ny + e] += r.gy[e], lm[b * ny + e] += r.my[e] + std::fabs(r.gy[e]);
        }
      std::lock_guard<std::mutex> lock(merge);
      for (std::size_t e = 0; e < gy.size(); ++e) gy[e] += ly[e], my[e] += lm[e];
    });
    out = tensor_list(std::move(gx), std::move(gy));
    mag = tensor_list(std::move(mx), std::move(my));
  }

  // The useful work, one forward and one adjoint per pair (sigkernel_grad's count per pair),
  // then the sums over the pairs (one add per point coordinate per pair). Kernels that
  // recompute a pair (the library's do, once per side: README.md) are not credited for it.
  double flops(const Sizes& s) const override {
    const double pairs = static_cast<double>(s.at("B1")) * s.at("B2");
    const double cells = static_cast<double>(s.at("L1") - 1) * (s.at("L2") - 1);
    const double fine = std::ldexp(1.0, 2 * static_cast<int>(s.at("DYADIC")));
    return pairs * (cells * (6.0 * s.at("D") + 7 + 15 * fine) + static_cast<double>(s.at("L1") + s.at("L2")) * s.at("D"));
  }
  double bytes(const Sizes& s, DType t) const override {
    double n = 0;
    for (std::size_t k = 0; k < 5; ++k) n += static_cast<double>(tensor_elements(k, s));
    return n * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override {
    return {"kernels/signature/sigkernel_gram_grad_cpu.json", "kernels/signature/sigkernel_gram_grad_opencl.json",
            "kernels/signature/sigkernel_gram_grad_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_sigkernel_gram_grad_problem() { return std::make_shared<SigKernelGramGrad>(); }

}  // namespace kforge
