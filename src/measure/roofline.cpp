// The speed of light: a result's time against the machine's roofs, SOL-ExecBench's score, and
// the suite figures (fast_p, geometric-mean SOL).
#include <algorithm>
#include <cmath>
#include <utility>

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

const char* level_name(MemoryLevel l) {
  switch (l) {
    case MemoryLevel::llc: return "llc";
    case MemoryLevel::l2: return "l2";
    default: return "dram";
  }
}

const Bandwidth& Roofs::at(MemoryLevel l) const {
  return l == MemoryLevel::l2 ? l2 : l == MemoryLevel::llc ? llc : dram;
}
Bandwidth& Roofs::at(MemoryLevel l) { return const_cast<Bandwidth&>(std::as_const(*this).at(l)); }

MemoryLevel Ceilings::memory_level(double bytes, bool hot) const {
  if (!hot) return MemoryLevel::dram;
  const bool in_llc = llc_bytes > 0 && bytes <= static_cast<double>(llc_bytes) &&
                      all.llc.best() > all.dram.best();
  const double below = in_llc ? all.llc.best() : all.dram.best();
  if (l2_bytes > 0 && bytes <= static_cast<double>(l2_bytes) && all.l2.best() > below)
    return MemoryLevel::l2;
  return in_llc ? MemoryLevel::llc : MemoryLevel::dram;
}

Roofline roofline(const Ceilings& c, DType t, double flops, double bytes, double seconds,
                  double baseline_seconds, bool hot, double written) {
  return roofline_at(c, c.memory_level(bytes, hot), t, flops, bytes, seconds, baseline_seconds, written);
}

Roofline roofline_at(const Ceilings& c, MemoryLevel level, DType t, double flops, double bytes,
                     double seconds, double baseline_seconds, double written) {
  Roofline r;
  const double peak = c.flops_for(t);
  const Bandwidth& bw = c.all.at(level);
  const double t_memory = bw.seconds_for(bytes, written);
  const double t_total = bw.best() > 0 ? bytes / bw.best() : 0;
  r.memory_roof = level_name(level);
  // The direction that limits (its own stream is slower than the best figure moves all bytes).
  const double t_read = bw.read > 0 && written >= 0 ? (bytes - written) / bw.read : 0;
  if (t_memory > t_total) r.memory_roof += t_read >= t_memory ? "-read" : "-write";
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
