// One run's outputs against the double reference: the per-run checks (guard, inputs_intact,
// poison, finite, all_zero, bound) and the error figures a user debugs from.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>

#include <fmt/format.h>

#include "kforge/util.hpp"
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
  // The exponent from the bits (ilogb is a library call, and this runs per element): zero and
  // the subnormal doubles read as -1023, below every dtype's emin.
  const int biased = static_cast<int>((std::bit_cast<std::uint64_t>(x) >> 52) & 0x7ff);
  const int e = std::max(biased - 1023, emin);
  return std::ldexp(1.0, e - (digits - 1));
}

// The q-quantiles of v for ascending qs; each selection searches only above the previous one.
std::vector<double> quantiles(std::vector<float>& v, std::initializer_list<double> qs) {
  std::vector<double> out;
  auto from = v.begin();
  for (double q : qs) {
    if (v.empty()) { out.push_back(0); continue; }
    const auto k = v.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(from, k, v.end());
    out.push_back(*k);
    from = k;
  }
  return out;
}

// One thread's share of a comparison: its counts and sums, its first bad element, and its
// elements' ULP errors written to the front of its own range of the shared array.
struct Partial {
  double err2 = 0, ref2 = 0, sum_abs = 0, sum_rel = 0, max_abs = 0, max_rel = 0, max_ratio = 0;
  std::int64_t elements = 0, unwritten = 0, non_finite = 0, bad = 0, rel_count = 0;
  std::int64_t nonzero_out = 0, distinguishable = 0, ulp_begin = 0, ulp_count = 0;
  BadElement first_bad;
};

}  // namespace

// Why this bound holds for every correct kernel, in any summation order and with or without
// FMA (Higham, Accuracy and Stability of Numerical Algorithms, §3.1): a reduction of n terms
// computed in unit roundoff u_acc satisfies |ŝ - s| <= γ_n · Σ|terms|, γ_n = n·u_acc/(1 - n·u_acc),
// where n is the problem's reduction length (gemm: K products and sums, plus alpha and beta)
// and Σ|terms| is the reference's `magnitude`. Rounding ŝ once to the output dtype adds
// u_out·|ŝ| <= u_out·(|s| + γ_n·Σ|terms|). Underflow adds at most half a subnormal spacing of
// the output and one subnormal of the accumulator per term. Nothing here is tuned to a test.
ErrorBound::ErrorBound(const Problem& p, const Instance& inst) : exact_(!is_float(inst.dtype)) {
  if (exact_) return;  // integer results are exact
  const DType acc = accumulation_type(inst.dtype);
  const double u_acc = unit_roundoff(acc);
  const double n = p.reduction_length(inst.sizes);
  const double nu = n * u_acc;
  u_out_ = unit_roundoff(inst.dtype);
  gamma_ = nu < 1 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
  floor_ = 0.5 * smallest_subnormal(inst.dtype) + n * smallest_subnormal(acc);
  u_acc_ = u_acc;
  sub_out_ = smallest_subnormal(inst.dtype);
  sub_acc_ = smallest_subnormal(acc);
}

double ErrorBound::operator()(double ref, double magnitude, double n) const {
  if (exact_) return 0;
  const double nu = n * u_acc_;
  const double gamma = nu < 1 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
  return u_out_ * std::fabs(ref) + (1 + u_out_) * gamma * magnitude + 0.5 * sub_out_ + n * sub_acc_;
}

namespace {

// Why tensor `name` must not be read here: an out tensor is never input; an inout tensor is
// poisoned only when the problem does not read it (gemm at beta = 0), named by the zero scalars.
std::string unread_because(const Problem& p, const Instance& inst, const std::string& name) {
  for (const auto& t : p.tensors())
    if (t.name == name && t.role == Role::out) return "it is an output only (it was read before it was written)";
  std::string zeros;
  for (const auto& [k, v] : inst.scalars)
    if (v == 0) zeros += fmt::format("{}{} = 0", zeros.empty() ? "" : ", ", k);
  return zeros.empty() ? "the problem does not read it in this instance" : zeros;
}

}  // namespace

Comparison compare(const Problem& p, const Instance& inst, const KernelOutput& got,
                   const std::vector<std::vector<double>>& ref,
                   const std::vector<std::vector<double>>& magnitude) {
  Comparison c;
  std::vector<std::string> names;
  for (const auto& t : p.tensors())
    if (is_output(t.role)) names.push_back(t.name);
  const ErrorBound bound_of(p, inst);
  const auto lengths = p.reduction_lengths(inst);  // empty: one length for all elements
  std::size_t total = 0;
  for (const auto& r : ref) total += r.size();
  std::vector<float> ulps(total);  // float: quantiles to three digits need no more
  std::vector<Partial> parts;      // in element order: tensor by tensor, range by range
  std::mutex parts_mutex;

  std::size_t offset = 0;
  for (std::size_t t = 0; t < ref.size(); ++t) {
    const std::size_t first_part = parts.size();
    parallel_for(static_cast<std::int64_t>(ref[t].size()), [&](std::int64_t b, std::int64_t e) {
      Partial s;
      s.ulp_begin = static_cast<std::int64_t>(offset) + b;
      for (auto i = static_cast<std::size_t>(b); i < static_cast<std::size_t>(e); ++i) {
        ++s.elements;
        const double r = ref[t][i], g = got.tensors[t][i];
        const double bound = lengths.empty() ? bound_of(r, magnitude[t][i]) : bound_of(r, magnitude[t][i], lengths[t][i]);
        if (std::fabs(r) > bound) ++s.distinguishable;
        bool bad = false;
        if (got.unwritten[t][i] && !std::isnan(r)) {  // a NaN result and the poison look alike
          ++s.unwritten;
          bad = true;
        } else if (got.unwritten[t][i]) {
          continue;
        } else if (!std::isfinite(g)) {
          // Only where the exact result rounds to the same non-finite value in this dtype. A NaN
          // reference is undefined (as for a finite output, whose error is then NaN and passes):
          // any value goes, an infinity too (kernel_kmeans' polynomial kernel past fp32's range).
          std::vector<double> rounded{r};
          round_to(inst.dtype, rounded);
          if (!(g == rounded[0] || std::isnan(r))) { ++s.non_finite; bad = true; }
        } else {
          if (g != 0) ++s.nonzero_out;
          const double err = std::fabs(g - r);
          s.err2 += err * err;
          s.ref2 += r * r;
          s.sum_abs += err;
          s.max_abs = std::max(s.max_abs, err);
          if (r != 0) {
            s.sum_rel += err / std::fabs(r);
            ++s.rel_count;
            s.max_rel = std::max(s.max_rel, err / std::fabs(r));
          }
          // Capped below float's overflow: an error at an exact-zero reference (relu's) is a
          // huge number of subnormal spacings, and an infinity would not survive JSON.
          ulps[s.ulp_begin + s.ulp_count++] =
              static_cast<float>(std::min(err / ulp(inst.dtype, r), 1e38));
          const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
          s.max_ratio = std::max(s.max_ratio, ratio);
          bad = err > bound;
        }
        if (!bad) continue;
        ++s.bad;
        if (s.first_bad.index < 0) s.first_bad = {names[t], got.flat(t, i), g, r, bound};
      }
      std::lock_guard lock(parts_mutex);
      parts.push_back(std::move(s));
    }, 1 << 16);
    std::sort(parts.begin() + static_cast<std::ptrdiff_t>(first_part), parts.end(),
              [](const Partial& a, const Partial& b) { return a.ulp_begin < b.ulp_begin; });
    offset += ref[t].size();
  }

  double err2 = 0, ref2 = 0, sum_abs = 0, sum_rel = 0;
  std::int64_t rel_count = 0, nonzero_out = 0, distinguishable = 0;
  std::size_t ulp_end = 0;
  for (const Partial& s : parts) {  // merged in element order: the same sums on every run
    c.elements += s.elements;
    c.unwritten += s.unwritten;
    c.non_finite += s.non_finite;
    c.bad_elements += s.bad;
    c.max_abs_error = std::max(c.max_abs_error, s.max_abs);
    c.max_rel_error = std::max(c.max_rel_error, s.max_rel);
    c.max_bound_ratio = std::max(c.max_bound_ratio, s.max_ratio);
    if (c.first_bad.index < 0 && s.first_bad.index >= 0) c.first_bad = s.first_bad;
    err2 += s.err2, ref2 += s.ref2, sum_abs += s.sum_abs, sum_rel += s.sum_rel;
    rel_count += s.rel_count, nonzero_out += s.nonzero_out, distinguishable += s.distinguishable;
    if (static_cast<std::size_t>(s.ulp_begin) != ulp_end)  // compact: each range's ULPs sit at its front
      std::copy_n(ulps.begin() + s.ulp_begin, s.ulp_count, ulps.begin() + static_cast<std::ptrdiff_t>(ulp_end));
    ulp_end += static_cast<std::size_t>(s.ulp_count);
  }
  ulps.resize(ulp_end);
  const auto n = static_cast<double>(std::max<std::size_t>(ulps.size(), 1));
  c.mean_abs_error = sum_abs / n;
  c.mean_rel_error = rel_count ? sum_rel / static_cast<double>(rel_count) : 0;
  c.rel_frobenius_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  const auto q = quantiles(ulps, {0.5, 0.9, 0.99});
  c.ulp_p50 = q[0], c.ulp_p90 = q[1], c.ulp_p99 = q[2];

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
  // NaNs traced to a poison payload come before the checks that would see them only as
  // unwritten or non-finite: they say what the kernel did.
  for (std::size_t t = 0; t < got.nan_traces.size() && t < names.size(); ++t) {
    const auto& tr = got.nan_traces[t];
    if (tr.from_guard)
      fail("oob_read", fmt::format("read out of bounds: {} element(s) of {} are NaNs carrying the guard bands' "
                                   "payload (first {}[{}]), so the kernel read past the end or before the "
                                   "start of a buffer and the value reached the output",
                                   tr.from_guard, names[t], names[t], tr.first_from_guard));
    if (tr.from_poison)
      fail("poison_read", fmt::format("{} was read although {}: {} element(s) are NaNs computed from its poison "
                                      "(first {}[{}])",
                                      names[t], unread_because(p, inst, names[t]), tr.from_poison, names[t],
                                      tr.first_from_poison));
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
