#include "kforge/verify.hpp"

#include <cmath>
#include <list>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kforge {
namespace {

// The accumulation precision a kernel must at least keep: fp32 for the 16-bit types.
double accumulation_roundoff(DType t) {
  return t == DType::fp64 ? unit_roundoff(DType::fp64) : unit_roundoff(DType::fp32);
}

struct Reference {
  std::vector<std::vector<double>> out, magnitude;
};

// The reference for one instance, kept for a few instances so that evaluating many
// configurations on the same inputs (tuning) computes it once.
std::shared_ptr<const Reference> reference_for(const Problem& p, const Instance& inst,
                                               const std::string& key) {
  static std::mutex mutex;
  static std::list<std::pair<std::string, std::shared_ptr<const Reference>>> cache;
  {
    std::lock_guard lock(mutex);
    for (const auto& [k, r] : cache)
      if (k == key) return r;
  }
  auto r = std::make_shared<Reference>();
  p.reference(inst, r->out, r->magnitude);
  std::lock_guard lock(mutex);
  cache.emplace_front(key, r);
  if (cache.size() > 4) cache.pop_back();
  return r;
}

}  // namespace

Comparison compare(const Problem& p, const Instance& inst,
                   const std::vector<std::vector<double>>& got,
                   const std::vector<std::vector<bool>>& unwritten,
                   const std::vector<std::vector<double>>& ref,
                   const std::vector<std::vector<double>>& magnitude) {
  Comparison c;
  const double u_out = unit_roundoff(inst.dtype);
  const double u_acc = accumulation_roundoff(inst.dtype);
  const double n = p.reduction_length(inst.sizes);
  const bool exact = !is_float(inst.dtype);
  double err2 = 0, ref2 = 0;
  for (std::size_t t = 0; t < ref.size(); ++t) {
    for (std::size_t i = 0; i < ref[t].size(); ++i) {
      ++c.elements;
      const double r = ref[t][i], g = got[t][i];
      if (unwritten[t][i]) { ++c.unwritten; ++c.bad_elements; continue; }
      if (!std::isfinite(g)) {
        if (std::isfinite(r) || std::isnan(g) != std::isnan(r)) { ++c.non_finite; ++c.bad_elements; }
        continue;
      }
      // Any summation order in precision u_acc, then one rounding to the output type.
      const double bound = exact ? 0.0
          : u_out * std::fabs(r) + (n * u_acc * (1 + u_out)) * magnitude[t][i] +
                std::numeric_limits<float>::denorm_min();
      const double e = std::fabs(g - r);
      err2 += e * e;
      ref2 += r * r;
      c.max_abs_error = std::max(c.max_abs_error, e);
      if (r != 0) c.max_rel_error = std::max(c.max_rel_error, e / std::fabs(r));
      const double ratio = bound > 0 ? e / bound : (e > 0 ? INFINITY : 0.0);
      c.max_bound_ratio = std::max(c.max_bound_ratio, ratio);
      if (e > bound) ++c.bad_elements;
    }
  }
  c.rel_frobenius_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (c.bad_elements == 0) return c;
  c.passed = false;
  std::ostringstream why;
  why << c.bad_elements << " of " << c.elements << " output elements wrong";
  if (c.unwritten) why << "; " << c.unwritten << " never written (still poisoned)";
  if (c.non_finite) why << "; " << c.non_finite << " NaN/Inf where the reference is finite";
  why << fmt::format("; max abs error {:.3g}, worst error/bound {:.3g}, relative Frobenius error {:.3g}",
                     c.max_abs_error, c.max_bound_ratio, c.rel_frobenius_error);
  c.failure = why.str();
  return c;
}

VerifyReport verify(const Problem& p, const Sizes& s, DType t, const KernelCall& call,
                    const VerifyOptions& opts) {
  VerifyReport rep;
  for (int trial = 0; trial < opts.trials; ++trial) {
    const Distribution dist = opts.distributions[trial % opts.distributions.size()];
    const Instance inst = p.make_instance(s, t, dist, opts.seed, trial);
    std::string key = fmt::format("{}|{}|{}|{}|{}", p.name(), dtype_name(t), distribution_name(dist),
                                  opts.seed, trial);
    for (const auto& [k, v] : s) key += fmt::format("|{}={}", k, v);
    // The kernel runs first, so it cannot find the reference's answer anywhere.
    std::vector<std::vector<bool>> unwritten;
    const auto got = call(inst, !p.reads_inout(inst), unwritten);
    const auto ref = reference_for(p, inst, key);
    const Comparison c = compare(p, inst, got, unwritten, ref->out, ref->magnitude);
    ++rep.trials_run;
    if (!c.passed || c.max_bound_ratio >= rep.worst.max_bound_ratio) {
      rep.worst = c;
      rep.worst_distribution = std::string(distribution_name(dist));
    }
    if (!c.passed) {
      rep.passed = false;
      rep.failure = fmt::format("trial {} ({} inputs", trial, distribution_name(dist));
      for (const auto& [k, v] : inst.scalars) rep.failure += fmt::format(", {}={}", k, v);
      rep.failure += "): " + c.failure;
      break;
    }
  }
  return rep;
}

nlohmann::json VerifyReport::to_json() const {
  return {{"passed", passed},
          {"failure", failure},
          {"trials", trials_run},
          {"worst_distribution", worst_distribution},
          {"elements", worst.elements},
          {"bad_elements", worst.bad_elements},
          {"unwritten", worst.unwritten},
          {"non_finite", worst.non_finite},
          {"max_abs_error", worst.max_abs_error},
          {"max_rel_error", worst.max_rel_error},
          {"rel_frobenius_error", worst.rel_frobenius_error},
          {"max_error_over_bound", worst.max_bound_ratio}};
}

}  // namespace kforge
