// The speed of light: a result's time against the machine's roofs, SOL-ExecBench's score, and
// the suite figures (fast_p, geometric-mean SOL).
#include <algorithm>
#include <cmath>

#include "kforge/measure.hpp"

namespace kforge {

double Bandwidth::best() const { return std::max({read, write, copy, triad}); }

double Bandwidth::seconds_for(double bytes, double written) const {
  const double all = best();
  if (!(all > 0)) return 0;
  double t = bytes / all;
  if (written >= 0 && written <= bytes) {
    if (read > 0) t = std::max(t, (bytes - written) / read);
    if (write > 0) t = std::max(t, written / write);
  }
  return t;
}

double Ceilings::flops_for(DType t) const {
  const Compute& c = all.compute;
  switch (t) {
    case DType::fp64: return c.fp64;
    case DType::fp16: return std::max(c.fp16, c.fp32);
    case DType::bf16: return std::max(c.bf16, c.fp32);
    case DType::int8: return c.int8 > 0 ? c.int8 : c.fp32;
    default: return c.fp32;
  }
}

bool Ceilings::cache_roof(double bytes, bool hot) const {
  return hot && llc_bytes > 0 && bytes <= static_cast<double>(llc_bytes) &&
         llc_bandwidth_bytes_s() > bandwidth_bytes_s();
}

Roofline roofline(const Ceilings& c, DType t, double flops, double bytes, double seconds,
                  double baseline_seconds, bool hot, double written) {
  Roofline r;
  const double peak = c.flops_for(t);
  const bool in_cache = c.cache_roof(bytes, hot);
  const Bandwidth& bw = in_cache ? c.all.llc : c.all.dram;
  const double t_memory = bw.seconds_for(bytes, written);
  const double t_total = bw.best() > 0 ? bytes / bw.best() : 0;
  r.memory_roof = in_cache ? "llc" : "dram";
  if (t_memory > t_total) r.memory_roof += bytes - written > written ? "-read" : "-write";
  const double t_compute = peak > 0 ? flops / peak : 0;
  r.bound = t_compute >= t_memory ? "compute" : "memory";
  r.t_sol_s = std::max(t_compute, t_memory);
  r.sol_fraction = seconds > 0 ? r.t_sol_s / seconds : 0;
  r.arithmetic_intensity = bytes > 0 ? flops / bytes : 0;
  if (baseline_seconds > 0) r.score = sol_score(seconds, r.t_sol_s, baseline_seconds);
  return r;
}

std::optional<double> sol_score(double t, double t_sol, double t_base) {
  if (!(t_base > t_sol) || !(t > 0)) return std::nullopt;
  return 1.0 / (1.0 + (t - t_sol) / (t_base - t_sol));
}

double fast_p(const std::vector<SuiteEntry>& entries, double p) {
  if (entries.empty()) return 0;
  std::size_t fast = 0;
  for (const auto& e : entries) fast += e.correct && e.speedup > 0 && e.speedup >= p ? 1 : 0;
  return static_cast<double>(fast) / static_cast<double>(entries.size());
}

double geomean_sol(const std::vector<SuiteEntry>& entries) {
  double log_sum = 0;
  std::size_t n = 0;
  for (const auto& e : entries)
    if (e.correct && e.sol_fraction > 0) {
      log_sum += std::log(e.sol_fraction);
      ++n;
    }
  return n ? std::exp(log_sum / static_cast<double>(n)) : 0;
}

}  // namespace kforge
