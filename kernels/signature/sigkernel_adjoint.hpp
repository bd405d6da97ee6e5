#pragma once
// The signature kernel's exact discrete adjoint for one pair of paths, in double, with its error
// scale: what the references of sigkernel_grad (B pairs) and sigkernel_gram_grad (the Gram
// form, every pair of two batches) share. The mathematics is in README.md ("Kernel gradient"):
// the forward scheme K, the adjoint Λ swept column by column, dk/da per coarse cell, then the
// increments and the points; beside each, the error scale (the local roundings of K and Λ
// carried by the scheme on absolute coefficients, a discrete Gronwall bound, then the sums).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kforge::sigkernel_adjoint {

// Rounding chains (γ_m's m), each bounded in units of γ_n, n = reduction_length, by the ratio m/n
// (γ_m <= (m/n) γ_n for m <= n). A node's step: at most 6 roundings (the adjoint's three
// products and three sums), 2 more for the coefficients' additions; the coefficients' parts in
// a: the inner product's D + 3 (the increments' subtractions, D products and sums), twice in
// a², the square and /12 (2D + 9).
struct Chains {
  double step, coef, a;  // ratios m/n
};

// The stored grid: the cpu kernels keep every node of K for each pair in flight.
constexpr double kMaxGridNodes = 1 << 20;

// The longest rounding chain of one pair's gradient, a direct term's: the term (1/2 + a/6 with
// its constant, the sums and products: 6) and its product with Λ (1), the sum over a coarse
// cell's 4^λ fine cells, the product with Δ (and Δ's subtraction: 2), the sum over the other
// path's increments (at most max(L1, L2)) and the point's subtraction (1); it also covers the
// coefficients' chain 2D + 9 (Chains).
inline double pair_reduction_length(std::int64_t L1, std::int64_t L2, std::int64_t D, std::int64_t dyadic) {
  return 2.0 * D + 12 + std::ldexp(1.0, 2 * static_cast<int>(dyadic)) + static_cast<double>(std::max(L1, L2));
}

// The chains of Chains as ratios to a reduction length n (at least pair_reduction_length).
inline Chains chains_for(double n, std::int64_t D) { return {8 / n, (2.0 * D + 9) / n, (D + 3.0) / n}; }

struct PairGrad {
  std::vector<double> gx, gy, mx, my;  // gradients and error scales, (L1,D) and (L2,D)
};

// One pair (this header's comment and README.md); grids indexed [p][q] with W = n2 + 1 columns, swept column by
// column. Error scales in units of γ_n (Chains).
inline void pair_gradient(const double* x, const double* y, std::int64_t L1, std::int64_t L2, std::int64_t D, int lambda,
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

}  // namespace kforge::sigkernel_adjoint
