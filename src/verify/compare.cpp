// One run's outputs against the double reference: the per-run checks (guard, inputs_intact,
// poison, finite, all_zero, bound) and the error figures a user debugs from.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kforge/verify.hpp"

namespace kforge {
namespace {

// The precision a kernel must at least accumulate in: fp32 for the 16-bit types.
DType accumulation_type(DType t) { return t == DType::fp64 ? DType::fp64 : DType::fp32; }

// The smallest positive subnormal: the absolute error floor where results underflow.
double smallest_subnormal(DType t) {
  switch (t) {
    case DType::fp64: return std::numeric_limits<double>::denorm_min();
    case DType::fp16: return std::ldexp(1.0, -24);
    case DType::bf16: return std::ldexp(1.0, -133);
    default: return std::numeric_limits<float>::denorm_min();
  }
}

// Spacing of the dtype's numbers at x (its unit in the last place).
double ulp(DType t, double x) {
  int digits = 24, emin = -126;
  if (t == DType::fp64) digits = 53, emin = -1022;
  else if (t == DType::fp16) digits = 11, emin = -14;
  else if (t == DType::bf16) digits = 8;
  const int e = x == 0 ? emin : std::max(std::ilogb(x), emin);
  return std::ldexp(1.0, e - (digits - 1));
}

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

// Why this bound holds for every correct kernel, in any summation order and with or without
// FMA (Higham, Accuracy and Stability of Numerical Algorithms, §3.1): a reduction of n terms
// computed in unit roundoff u_acc satisfies |ŝ - s| <= γ_n · Σ|terms|, γ_n = n·u_acc/(1 - n·u_acc),
// where n is the problem's reduction length (gemm: K products and sums, plus alpha and beta)
// and Σ|terms| is the reference's `magnitude`. Rounding ŝ once to the output dtype adds
// u_out·|ŝ| <= u_out·(|s| + γ_n·Σ|terms|). Underflow adds at most half a subnormal spacing of
// the output and one subnormal of the accumulator per term. Nothing here is tuned to a test.
double error_bound(const Problem& p, const Instance& inst, double ref, double magnitude) {
  if (!is_float(inst.dtype)) return 0;  // integer results are exact
  const DType acc = accumulation_type(inst.dtype);
  const double u_out = unit_roundoff(inst.dtype), u_acc = unit_roundoff(acc);
  const double n = p.reduction_length(inst.sizes);
  const double nu = n * u_acc;
  const double gamma = nu < 1 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
  return u_out * std::fabs(ref) + (1 + u_out) * gamma * magnitude +
         0.5 * smallest_subnormal(inst.dtype) + n * smallest_subnormal(acc);
}

Comparison compare(const Problem& p, const Instance& inst, const KernelOutput& got,
                   const std::vector<std::vector<double>>& ref,
                   const std::vector<std::vector<double>>& magnitude) {
  Comparison c;
  std::vector<std::string> names;
  for (const auto& t : p.tensors())
    if (t.role != Role::in) names.push_back(t.name);

  double err2 = 0, ref2 = 0, sum_abs = 0, sum_rel = 0;
  std::int64_t rel_count = 0, nonzero_out = 0, distinguishable = 0;
  std::vector<double> ulps;
  for (std::size_t t = 0; t < ref.size(); ++t) {
    for (std::size_t i = 0; i < ref[t].size(); ++i) {
      ++c.elements;
      const double r = ref[t][i], g = got.tensors[t][i];
      const double bound = error_bound(p, inst, r, magnitude[t][i]);
      if (std::fabs(r) > bound) ++distinguishable;
      bool bad = false;
      if (got.unwritten[t][i] && !std::isnan(r)) {  // a NaN result and the poison look alike
        ++c.unwritten;
        bad = true;
      } else if (got.unwritten[t][i]) {
        continue;
      } else if (!std::isfinite(g)) {
        // Only where the exact result rounds to the same non-finite value in this dtype.
        std::vector<double> rounded{r};
        round_to(inst.dtype, rounded);
        if (!(g == rounded[0] || (std::isnan(g) && std::isnan(r)))) { ++c.non_finite; bad = true; }
      } else {
        if (g != 0) ++nonzero_out;
        const double e = std::fabs(g - r);
        err2 += e * e;
        ref2 += r * r;
        sum_abs += e;
        c.max_abs_error = std::max(c.max_abs_error, e);
        if (r != 0) {
          sum_rel += e / std::fabs(r);
          ++rel_count;
          c.max_rel_error = std::max(c.max_rel_error, e / std::fabs(r));
        }
        ulps.push_back(e / ulp(inst.dtype, r));
        const double ratio = bound > 0 ? e / bound : (e > 0 ? INFINITY : 0.0);
        c.max_bound_ratio = std::max(c.max_bound_ratio, ratio);
        bad = e > bound;
      }
      if (!bad) continue;
      ++c.bad_elements;
      if (c.first_bad.index < 0)
        c.first_bad = {names[t], static_cast<std::int64_t>(i), g, r, bound};
    }
  }
  const auto n = static_cast<double>(std::max<std::size_t>(ulps.size(), 1));
  c.mean_abs_error = sum_abs / n;
  c.mean_rel_error = rel_count ? sum_rel / static_cast<double>(rel_count) : 0;
  c.rel_frobenius_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  c.ulp_p50 = percentile(ulps, 0.5);
  c.ulp_p90 = percentile(ulps, 0.9);
  c.ulp_p99 = percentile(ulps, 0.99);

  auto fail = [&](const char* check, std::string why) {
    if (!c.passed) return;
    c.passed = false;
    c.failed_check = check;
    c.failure = std::move(why);
  };
  if (got.guard_violations) fail("guard", "wrote out of bounds: " + got.guard_detail);
  if (!got.inputs_modified.empty()) {
    std::string list;
    for (const auto& s : got.inputs_modified) list += (list.empty() ? "" : ", ") + s;
    fail("inputs_intact", "wrote into its input tensor(s) " + list);
  }
  if (c.unwritten)
    fail("poison", fmt::format("{} of {} output elements never written (still poisoned)", c.unwritten, c.elements));
  if (c.non_finite)
    fail("finite", fmt::format("{} output elements are NaN/Inf where the reference is finite", c.non_finite));
  if (nonzero_out == 0 && distinguishable > 0)
    fail("all_zero", fmt::format("the output is all zeros; the reference is not ({} elements beyond their bound)",
                                 distinguishable));
  if (c.bad_elements)
    fail("bound", fmt::format("{} of {} output elements beyond their error bound; worst error/bound {:.3g}, "
                              "max abs error {:.3g}, relative Frobenius error {:.3g}",
                              c.bad_elements, c.elements, c.max_bound_ratio, c.max_abs_error,
                              c.rel_frobenius_error));
  if (!c.passed && c.first_bad.index >= 0)
    c.failure += fmt::format("; first bad element {}[{}]: got {:.9g}, expected {:.9g} (bound {:.3g})",
                             c.first_bad.tensor, c.first_bad.index, c.first_bad.got,
                             c.first_bad.expected, c.first_bad.bound);
  return c;
}

}  // namespace kforge
