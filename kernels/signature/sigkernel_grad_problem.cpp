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
#include "kforge/util.hpp"
#include "paths.hpp"

namespace kforge {
namespace {

using namespace signature_paths;

// The stored grid: the cpu kernel keeps every node of K for each pair in flight.
constexpr double kMaxGridNodes = 1 << 20;

// Rounding chains (γ_m's m), each bounded in units of γ_n, n = reduction_length, by the ratio m/n
// (γ_m <= (m/n) γ_n for m <= n). A node's step: at most 6 roundings (the adjoint's three
// products and three sums), 2 more for the coefficients' additions; the coefficients' parts in
// a: the inner product's D + 3 (the increments' subtractions, D products and sums), twice in
// a², the square and /12 (2D + 9).
struct Chains {
  double step, coef, a;  // ratios m/n
};

struct PairGrad {
  std::vector<double> gx, gy, mx, my;  // gradients and error scales, (L1,D) and (L2,D)
};

// One pair (module comment); grids indexed [p][q] with W = n2 + 1 columns, swept column by
// column. Error scales in units of γ_n (Chains).
void pair_gradient(const double* x, const double* y, std::int64_t L1, std::int64_t L2, std::int64_t D, int lambda,
                   double gk, const Chains& ch, PairGrad& r) {
  const std::int64_t C1 = L1 - 1, C2 = L2 - 1, n1 = C1 << lambda, n2 = C2 << lambda, W = n2 + 1;
  const double scale = std::ldexp(1.0, -2 * lambda);
  std::vector<double> dx(C1 * D), dy(C2 * D), a(C1 * C2), abar(C1 * C2);
  for (std::int64_t i = 0; i < C1 * D; ++i) dx[i] = x[i + D] - x[i];
  for (std::int64_t j = 0; j < C2 * D; ++j) dy[j] = y[j + D] - y[j];
  for (std::int64_t ci = 0; ci < C1; ++ci)
    for (std::int64_t cj = 0; cj < C2; ++cj) {
      double s = 0, sa = 0;
      for (std::int64_t d = 0; d < D; ++d) s += dx[ci * D + d] * dy[cj * D + d], sa += std::fabs(dx[ci * D + d] * dy[cj * D + d]);
      a[ci * C2 + cj] = s * scale, abar[ci * C2 + cj] = sa * scale;
    }
  // Coefficients of the cell below-left of node (p,q) (the callers keep (p,q) on the grid: the
  // adjoint clamps its neighbours' indices, whose values are zero past it). The bars are on
  // ā; c2gron = 1 - ā²/12 is the Gronwall scheme's weight (README.md, "Error bound").
  const auto cell = [&](std::int64_t p, std::int64_t q) { return ((p - 1) >> lambda) * C2 + ((q - 1) >> lambda); };
  const auto inside = [&](std::int64_t p, std::int64_t q) { return p >= 1 && q >= 1 && p <= n1 && q <= n2; };
  const auto c1 = [&](std::int64_t p, std::int64_t q) { const double v = a[cell(p, q)]; return 1 + v / 2 + v * v / 12; };
  const auto c2 = [&](std::int64_t p, std::int64_t q) { const double v = a[cell(p, q)]; return 1 - v * v / 12; };
  const auto c1bar = [&](std::int64_t p, std::int64_t q) { const double v = abar[cell(p, q)]; return 1 + v / 2 + v * v / 12; };
  const auto c2bar = [&](std::int64_t p, std::int64_t q) { const double v = abar[cell(p, q)]; return 1 + v * v / 12; };
  const auto c2gron = [&](std::int64_t p, std::int64_t q) { const double v = abar[cell(p, q)]; return 1 - v * v / 12; };
  // A node's local rounding from its neighbours' magnitudes m1, m1' (through c1) and m2 (c2).
  const auto local_error = [&](double m1, std::int64_t p1, std::int64_t q1, double m1b, std::int64_t p1b, std::int64_t q1b,
                               double m2, std::int64_t p2, std::int64_t q2) {
    const double a1 = abar[cell(p1, q1)], a1b = abar[cell(p1b, q1b)], a2 = abar[cell(p2, q2)];
    return ch.step * (m1 * c1bar(p1, q1) + m1b * c1bar(p1b, q1b) + m2 * c2bar(p2, q2)) +
           ch.coef * (m1 * (a1 / 2 + a1 * a1 / 12) + m1b * (a1b / 2 + a1b * a1b / 12) + m2 * a2 * a2 / 12);
  };

  // Forward: K, and EK[p][q] >= |K's error at (p,q)| / γ_n: the local errors of every node
  // before it, carried by the scheme on ā (c̄1 = 1 + ā/2 + ā²/12 and
  // 1 - ā²/12: the scheme in its Volterra form has nonnegative weights ā/2 + ā²/12 and ā²/12,
  // so that scheme bounds the signed one's response to any local error).
  const std::size_t nodes = static_cast<std::size_t>((n1 + 1) * W);
  std::vector<double> K(nodes, 1.0), EK(nodes, 0.0);
  for (std::int64_t q = 1; q <= n2; ++q)
    for (std::int64_t p = 1; p <= n1; ++p) {
      const double kl = K[p * W + q - 1], ku = K[(p - 1) * W + q], kd = K[(p - 1) * W + q - 1];
      K[p * W + q] = (kl + ku) * c1(p, q) - kd * c2(p, q);
      const double local = local_error(std::fabs(kl), p, q, std::fabs(ku), p, q, std::fabs(kd), p, q);
      EK[p * W + q] = (EK[p * W + q - 1] + EK[(p - 1) * W + q]) * c1bar(p, q) - EK[(p - 1) * W + q - 1] * c2gron(p, q) + local;
    }
  // Backward: Λ and its error scale EL the same way (the transposed scheme's Volterra form has
  // the same nonnegative weights), columns from the last.
  std::vector<double> Lam(static_cast<std::size_t>((n1 + 2) * (W + 1)), 0.0), EL(Lam.size(), 0.0);
  const std::int64_t V = W + 1;  // Λ's row stride: one zero column past n2, one zero row past n1
  for (std::int64_t q = n2; q >= 1; --q)
    for (std::int64_t p = n1; p >= 1; --p) {
      // Neighbours past the grid are zero (their cell index is then unused: weight 0).
      const double lr = inside(p, q + 1) ? Lam[p * V + q + 1] : 0.0, ld = inside(p + 1, q) ? Lam[(p + 1) * V + q] : 0.0;
      const double lg = inside(p + 1, q + 1) ? Lam[(p + 1) * V + q + 1] : 0.0;
      const std::int64_t pr = p, qr = std::min(q + 1, n2), pd = std::min(p + 1, n1), qd = q, pg = pd, qg = qr;
      Lam[p * V + q] = (p == n1 && q == n2 ? gk : 0.0) + lr * c1(pr, qr) + ld * c1(pd, qd) - lg * c2(pg, qg);
      EL[p * V + q] = EL[p * V + q + 1] * c1bar(pr, qr) + EL[(p + 1) * V + q] * c1bar(pd, qd) -
                      EL[(p + 1) * V + q + 1] * c2gron(pg, qg) +
                      local_error(std::fabs(lr), pr, qr, std::fabs(ld), pd, qd, std::fabs(lg), pg, qg);
    }
  // dk/da per coarse cell, and its error scale: the errors carried from K and Λ, and the direct
  // roundings of the terms and sums (the whole chain: ratio 1), a's own error included
  // (|∂T/∂a| ā through a's chain).
  std::vector<double> ga(a.size(), 0.0), ma(a.size(), 0.0);
  for (std::int64_t q = 1; q <= n2; ++q)
    for (std::int64_t p = 1; p <= n1; ++p) {
      const std::int64_t c = cell(p, q);
      const double kl = K[p * W + q - 1], ku = K[(p - 1) * W + q], kd = K[(p - 1) * W + q - 1], l = Lam[p * V + q];
      const double ab = abar[c], d1bar = 0.5 + ab / 6;
      ga[c] += l * ((kl + ku) * (0.5 + a[c] / 6) + kd * a[c] / 6);
      const double tbar = (std::fabs(kl) + std::fabs(ku)) * d1bar + std::fabs(kd) * ab / 6;
      const double carried = EL[p * V + q] * tbar +
                             std::fabs(l) * ((EK[p * W + q - 1] + EK[(p - 1) * W + q]) * d1bar + EK[(p - 1) * W + q - 1] * ab / 6);
      ma[c] += carried + std::fabs(l) * (tbar + ch.a * (std::fabs(kl) + std::fabs(ku) + std::fabs(kd)) * ab / 6);
    }
  // Into the increments, then the points; the factor 2 covers second-order terms.
  std::vector<double> gdx(C1 * D, 0.0), gdy(C2 * D, 0.0), mdx(C1 * D, 0.0), mdy(C2 * D, 0.0);
  for (std::int64_t ci = 0; ci < C1; ++ci)
    for (std::int64_t cj = 0; cj < C2; ++cj) {
      const double g = ga[ci * C2 + cj] * scale, m = ma[ci * C2 + cj] * scale;
      for (std::int64_t d = 0; d < D; ++d) {
        gdx[ci * D + d] += g * dy[cj * D + d], mdx[ci * D + d] += m * std::fabs(dy[cj * D + d]);
        gdy[cj * D + d] += g * dx[ci * D + d], mdy[cj * D + d] += m * std::fabs(dx[ci * D + d]);
      }
    }
  const auto to_points = [D](const std::vector<double>& g, const std::vector<double>& m, std::int64_t L,
                             std::vector<double>& gp, std::vector<double>& mp) {
    gp.assign(static_cast<std::size_t>(L * D), 0.0), mp.assign(gp.size(), 0.0);
    for (std::int64_t t = 0; t + 1 < L; ++t)
      for (std::int64_t d = 0; d < D; ++d) {
        gp[(t + 1) * D + d] += g[t * D + d], gp[t * D + d] -= g[t * D + d];
        mp[(t + 1) * D + d] += 2 * m[t * D + d], mp[t * D + d] += 2 * m[t * D + d];
      }
  };
  to_points(gdx, mdx, L1, r.gx, r.mx);
  to_points(gdy, mdy, L2, r.gy, r.my);
}

class SigKernelGrad final : public Problem {
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
    for (const auto& [k, v] : s)
      if (v < (k == "DYADIC" ? 0 : 1))
        throw UsageError("size " + k + "=" + std::to_string(v) + " must be at least " + (k == "DYADIC" ? "0" : "1"));
    for (const char* l : {"L1", "L2"})
      if (s.at(l) < 2) throw UsageError(std::string("size ") + l + "=" + std::to_string(s.at(l)) + " must be at least 2 (a path of one point has no increment)");
    if (s.at("DYADIC") > kMaxDyadic)
      throw UsageError("size DYADIC=" + std::to_string(s.at("DYADIC")) + " must be in [0, 4] (each increment split in 2^DYADIC)");
    const double r = std::ldexp(1.0, static_cast<int>(s.at("DYADIC")));
    const double grid = ((s.at("L1") - 1) * r + 1) * ((s.at("L2") - 1) * r + 1);
    if (grid > kMaxGridNodes)
      throw UsageError("sizes L1, L2, DYADIC give a grid of " + std::to_string(static_cast<long long>(grid)) +
                       " nodes per pair; the gradient stores it, at most 2^20: lower L1, L2 or DYADIC");
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

  // The longest rounding chain, a direct term's: the term (1/2 + a/6 with its constant, the
  // sums and products: 6) and its product with Λ (1), the sum over a coarse cell's 4^λ fine
  // cells, the product with Δ (and Δ's subtraction: 2), the sum over the other path's
  // increments (at most max(L1, L2)) and the point's subtraction (1); it also covers the
  // coefficients' chain 2D + 9 (Chains).
  double reduction_length(const Sizes& s) const override {
    return 2.0 * s.at("D") + 12 + std::ldexp(1.0, 2 * static_cast<int>(s.at("DYADIC"))) +
           static_cast<double>(std::max(s.at("L1"), s.at("L2")));
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t B = in.sizes.at("B"), L1 = in.sizes.at("L1"), L2 = in.sizes.at("L2"), D = in.sizes.at("D");
    const int lambda = static_cast<int>(in.sizes.at("DYADIC"));
    const double n = reduction_length(in.sizes);
    const Chains ch{8 / n, (2.0 * D + 9) / n, (D + 3.0) / n};
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
