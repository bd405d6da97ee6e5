// sigkernel_grad: the gradient of the signature kernel in both paths of each pair, by the exact
// adjoint of the discrete PDE scheme that `sigkernel` solves (so it is the gradient of the
// computed kernel, not of the continuous one). A batch of B pairs (x_b, y_b), an upstream
// gradient GK (B): GX = d/dX sum_b GK_b k(x_b, y_b), GY likewise (README.md, "Kernel gradient").
//
// The forward scheme on the (n1+1) x (n2+1) grid of nodes (K = 1 on row 0 and column 0),
// n = (L-1) 2^DYADIC, node (p,q) from cell (p-1,q-1) of coarse cell c = ((p-1)>>λ, (q-1)>>λ):
//   K[p][q] = (K[p][q-1] + K[p-1][q]) c1 - K[p-1][q-1] c2,  c1 = 1 + a/2 + a²/12, c2 = 1 - a²/12,
//   a_c = <Δx_ci, Δy_cj> / 4^λ
// Its adjoint Λ[p][q] = d k / d K[p][q] (k = K[n1][n2], seeded with GK) runs the transposed
// scheme backwards: Λ[p][q] = Λ[p][q+1] c1(p-1,q) + Λ[p+1][q] c1(p,q-1) - Λ[p+1][q+1] c2(p,q).
// Then dk/da_c = sum over c's fine cells of Λ[p][q] ((K[p][q-1] + K[p-1][q]) (1/2 + a/6) +
// K[p-1][q-1] a/6), and a_c = <Δx, Δy>/4^λ gives dk/dΔx_ci = sum_cj dk/da_c Δy_cj / 4^λ (Δy
// likewise), each increment adding to its end point and subtracting from its start.
//
// The reference runs this in double column by column (the kernel goes row by row), and the
// error scale of README.md: the local roundings of K and of Λ carried to every node by the
// scheme on absolute coefficients (a bound on the scheme's Riemann function, by a discrete
// Gronwall argument), then through the gradient's sums.
#include <algorithm>
#include <cmath>

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

class SigKernelGrad final : public Problem, public StructuredReconditioning {
 public:
  std::string name() const override { return "sigkernel_grad"; }
  std::string description() const override {
    return "gradient of sum_b GK_b k(x_b, y_b) (signature kernel of B pairs, its PDE scheme as sigkernel's) by the "
           "scheme's exact adjoint: X (B,L1,D), Y (B,L2,D), GK (B) -> GX (B,L1,D), GY (B,L2,D)";
  }
  std::vector<std::string> size_names() const override { return {"B", "L1", "L2", "D", "DYADIC"}; }
  Sizes default_sizes() const override { return {{"B", 64}, {"L1", 64}, {"L2", 64}, {"D", 4}, {"DYADIC", 0}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  // W: the long-path GPU kernels' workspace (a scratch tensor: poisoned before every run, never
  // compared, not in the fewest bytes), per pair the K grid, a per coarse cell (padded by a row
  // and a column of zeros), two Λ rows and a coarse row of dk/da (workspace_per_pair). The cpu
  // kernel and the short-path GPU kernels keep these in their own memory and leave W alone.
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"Y", Role::in}, {"GK", Role::in}, {"GX", Role::out}, {"GY", Role::out}, {"W", Role::scratch}};
  }
  static std::int64_t workspace_per_pair(const Sizes& s) {
    const std::int64_t C1 = s.at("L1") - 1, C2 = s.at("L2") - 1, n1 = C1 << s.at("DYADIC"), n2 = C2 << s.at("DYADIC");
    return (n1 + 1) * (n2 + 1) + (C1 + 1) * (C2 + 1) + 2 * (n2 + 2) + (C2 + 1);
  }
  std::vector<std::string> scalar_names() const override { return {}; }
  Scalars scalars_for_trial(int) const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    if (t == 2) return s.at("B");
    if (t == 5) return s.at("B") * workspace_per_pair(s);
    return s.at("B") * (t == 0 || t == 3 ? s.at("L1") : s.at("L2")) * s.at("D");
  }
  void check_sizes(const Sizes& s) const override {
    check_pde_sizes(s, kMaxGridNodes);
    check_int_abi("B*L1*D", static_cast<double>(s.at("B")) * s.at("L1") * s.at("D"));
    check_int_abi("B*L2*D", static_cast<double>(s.at("B")) * s.at("L2") * s.at("D"));
    check_int_abi("B*(grid+coarse grid+rows) (the workspace W)", static_cast<double>(s.at("B")) * workspace_per_pair(s));
  }
  // Per pair the reference sweeps the fine grid three times and the coarse cells over D.
  double fuzz_work(const Sizes& s) const override {
    const double r = std::ldexp(1.0, 2 * static_cast<int>(std::min<std::int64_t>(s.at("DYADIC"), 30)));
    return static_cast<double>(s.at("B")) * s.at("L1") * s.at("L2") * (3 * r + s.at("D"));
  }
  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    const std::int64_t D = inst.sizes.at("D");
    scale_paths(inst.tensors[0], inst.sizes.at("B"), inst.sizes.at("L1"), D, 2.0);
    scale_paths(inst.tensors[1], inst.sizes.at("B"), inst.sizes.at("L2"), D, 2.0);
  }
  // Structured inputs on the paths X and Y as sigkernel's (kernels/signature/problem.cpp, SigKernel);
  // the cotangents GK stay as drawn.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {s.at("L1") * s.at("D"), s.at("L2") * s.at("D"), -1, -1, -1, -1};
  }
  void recondition_structured(Instance& inst) const override { condition_inputs(inst, 0, 0); }

  // The longest rounding chain, a direct term's (sigkernel_adjoint.hpp).
  double reduction_length(const Sizes& s) const override {
    return pair_reduction_length(s.at("L1"), s.at("L2"), s.at("D"), s.at("DYADIC"));
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t B = in.sizes.at("B"), L1 = in.sizes.at("L1"), L2 = in.sizes.at("L2"), D = in.sizes.at("D");
    const int lambda = static_cast<int>(in.sizes.at("DYADIC"));
    const double n = reduction_length(in.sizes);
    const Chains ch = chains_for(n, D);
    std::vector<double> gx(static_cast<std::size_t>(B * L1 * D)), gy(static_cast<std::size_t>(B * L2 * D));
    std::vector<double> mx(gx.size()), my(gy.size());
    parallel_for(B, [&](std::int64_t b0, std::int64_t b1) {
      PairGrad r;
      for (std::int64_t b = b0; b < b1; ++b) {
        pair_gradient(&in.tensors[0][b * L1 * D], &in.tensors[1][b * L2 * D], L1, L2, D, lambda, in.tensors[2][b], ch, r);
        std::copy(r.gx.begin(), r.gx.end(), gx.begin() + b * L1 * D);
        std::copy(r.mx.begin(), r.mx.end(), mx.begin() + b * L1 * D);
        std::copy(r.gy.begin(), r.gy.end(), gy.begin() + b * L2 * D);
        std::copy(r.my.begin(), r.my.end(), my.begin() + b * L2 * D);
      }
    });
    out = tensor_list(std::move(gx), std::move(gy));
    mag = tensor_list(std::move(mx), std::move(my));
  }

  // Per pair: the coarse cells' inner products and coefficients (2D + 5 + 2 for the
  // derivative's factors), per fine cell the forward step (4), the adjoint step (5) and the
  // gradient's term (6), then the increments' gradients (4D per coarse cell).
  double flops(const Sizes& s) const override {
    const double cells = static_cast<double>(s.at("L1") - 1) * (s.at("L2") - 1);
    const double fine = std::ldexp(1.0, 2 * static_cast<int>(s.at("DYADIC")));
    return static_cast<double>(s.at("B")) * cells * (6.0 * s.at("D") + 7 + 15 * fine);
  }
  double bytes(const Sizes& s, DType t) const override {
    double n = 0;
    for (std::size_t k = 0; k < 5; ++k) n += static_cast<double>(tensor_elements(k, s));
    return n * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override {
    // The long-path GPU kernels first: their "applies" picks them where the grid passes the
    // short kernels' private buffers (at their default MAXG, MAXN).
    return {"kernels/signature/sigkernel_grad_cpu.json", "kernels/signature/sigkernel_grad_long_opencl.json",
            "kernels/signature/sigkernel_grad_opencl.json", "kernels/signature/sigkernel_grad_long_cuda.json",
            "kernels/signature/sigkernel_grad_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_sigkernel_grad_problem() { return std::make_shared<SigKernelGrad>(); }

}  // namespace kforge
