#pragma once
// The reference of a softmax-weighted sum, out = Σ_j softmax(s)_j · v_j, and the first-order
// error bound of an fp32 kernel that computes it with an online softmax (running maximum and
// sum, flash attention's), in units of fp32's roundoff u. Shared by `attention` (keys of a
// head) and `gnn_attention` (a node's edges).
//
// With E_j the error of score s_j (from its own arithmetic, given by the caller, plus the
// rounding of s - max and the rescalings' exponents, which move p_j by up to u·(max - s_j)):
//   |δout_d| <= 2·(Σ_j p_j|v_jd|·E_j + Σ_j p_j|v_jd| · Σ_j p_j·E_j)    (softmax's conditioning)
//             + Σ_j p_j|v_jd| · 2·(exp, rescaling and summation ulps over n keys)
//             + n·2^-126·max_j |v_jd|    (weights that underflow are flushed to zero)
// The factor 2 on the first term covers the second-order terms while E·u is small; when it is
// not (E·u > 0.1), the bound is the convex hull's: 2·max_j |v_jd|.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace kforge {

inline constexpr double kSoftmaxU = 0x1p-24;  // fp32's unit roundoff
inline constexpr double kSoftmaxExpUlps = 4;  // exp/exp2 of an fp32 argument, and its rounding

// s and err: the n scores and their error scales (err is extended in place by the softmax's own
// roundings); value(j): key j's row of `width` values. Writes out[width] (exact, in double) and
// bound[width] (units of u). n = 0 leaves both zero.
template <class ValueRow>
void softmax_weighted_sum(const std::vector<double>& s, std::vector<double>& err, std::int64_t n,
                          std::int64_t width, ValueRow value, double* out, double* bound) {
  std::fill(out, out + width, 0.0);
  std::fill(bound, bound + width, 0.0);
  if (n == 0) return;
  double mx = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  std::vector<double> e(n), w(width, 0.0), x(width, 0.0), vmax(width, 0.0);
  double sum = 0, ebar = 0, emax = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    sum += e[j] = std::exp(s[j] - mx);
    err[j] += 2 * (mx - s[j]);  // s - max rounded once, and the online rescalings
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const double p = e[j] / sum;
    ebar += p * err[j];
    emax = std::max(emax, err[j]);
    const double* v = value(j);
    for (std::int64_t d = 0; d < width; ++d) {
      out[d] += p * v[d];
      w[d] += p * std::fabs(v[d]);
      x[d] += p * std::fabs(v[d]) * err[j];
      vmax[d] = std::max(vmax[d], std::fabs(v[d]));
    }
  }
  const double nn = static_cast<double>(n);
  const double softmax_ulps = 2 * (kSoftmaxExpUlps + 2 + nn * (kSoftmaxExpUlps + 2) + 2 * nn + 2);
  for (std::int64_t d = 0; d < width; ++d) {
    double b = 2 * (x[d] + w[d] * ebar) + w[d] * softmax_ulps;
    // Weights below fp32's normal range may be flushed to zero (FTZ, or an exp that stops at
    // 2^-126): each of the n terms may lose 2^-126·|v| (the running sum is >= 1).
    b += nn * 0x1p-126 * vmax[d] / kSoftmaxU;
    if (emax * kSoftmaxU > 0.1) b = std::max(b, 2 * vmax[d] / kSoftmaxU);
    bound[d] = b;
  }
}

}  // namespace kforge
