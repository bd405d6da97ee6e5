// The speed-of-light gate (sol_gate.hpp). A micro-benchmark only ever under-measures, so a
// result beyond the cached roof first puts the roof in doubt: the roof it beat is measured again
// at that moment, for that data size and on the same threads, a few rounds, and the result is
// suspect only if it beats that roof by more than its own noise times the roof's spread between
// rounds, and still does after the whole ceilings were measured again.
#include "eval/sol_gate.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kforge {
namespace {

constexpr int kRoofRounds = 3;

void raise_peak(Compute& c, DType t, double peak) {
  switch (t) {
    case DType::fp64: c.fp64 = std::max(c.fp64, peak); break;
    case DType::fp16: c.fp16 = std::max(c.fp16, peak); break;
    case DType::bf16: c.bf16 = std::max(c.bf16, peak); break;
    case DType::int8: c.int8 = std::max(c.int8, peak); break;
    default: c.fp32 = std::max(c.fp32, peak); break;
  }
}

std::string data_words(const SolQuestion& q) {
  return fmt::format("{:.3g} MB {}", q.bytes * 1e-6, q.hot ? "hot" : "cold");
}

}  // namespace

SolJudgement judge_speed_of_light(Backend& backend, const SolQuestion& q, const Timing& timing) {
  SolJudgement j;
  const double t = timing.median_s;
  // The noise is robust (1.4826·MAD estimates sigma): a cheat that computes once and replays
  // afterwards has one slow sample, whose stdev would otherwise excuse any median.
  const double noise = std::max(0.05, 3 * 1.4826 * timing.mad_s / t);
  j.margin = 1 + noise;
  const Ceilings cached = ceilings(backend);
  j.roofline = roofline(cached, q.dtype, q.flops, q.bytes, t, q.baseline_s, q.hot, q.written);
  j.judged = j.roofline.sol_fraction;
  if (j.judged <= j.margin) {
    j.detail = fmt::format("{:.1f}% of the measured speed of light ({}-bound)", 100 * j.judged,
                           j.roofline.bound);
    return j;
  }

  // Beyond the cached roof: measure again the roof (or roofs) it beat, now, for this data.
  const MemoryLevel level = cached.memory_level(q.bytes, q.hot);
  const double peak = cached.flops_for(q.dtype);
  const bool compute = peak > 0 && q.flops / peak > j.margin * t;
  const bool memory = cached.all.at(level).seconds_for(q.bytes, q.written) > j.margin * t;
  const RoofNow now = measure_roof_for(backend, q.dtype, q.bytes, q.hot, memory, compute, kRoofRounds);
  // The roof moves between rounds (a neighbour starts or stops): allow the result as much.
  const double spread = std::max(memory ? now.bandwidth_spread : 1.0, compute ? now.peak_spread : 1.0);
  j.margin = (1 + noise) * spread;

  // Reported: the best roof known (cached or now). Judged: that, or where the ceilings contradict
  // themselves, what they allow at most (Ceilings::upper_bound_at).
  const auto against = [&](const Ceilings& c, bool upper) {
    Ceilings u = c;
    const MemoryLevel l = c.memory_level(q.bytes, q.hot);
    if (upper) u.all.at(l) = c.upper_bound_at(l);
    u.all.at(l).keep_best(now.bandwidth);
    raise_peak(u.all.compute, q.dtype, now.peak);
    return roofline_at(u, l, q.dtype, q.flops, q.bytes, t, q.baseline_s, q.written);
  };
  const double cached_sol = j.roofline.sol_fraction;
  Roofline judged = against(cached, true);
  bool whole = false;
  if (judged.sol_fraction > j.margin) {
    // Still beyond: the whole ceilings measured again (the cache keeps the best of each figure).
    const Ceilings again = ceilings(backend, true);
    judged = against(again, true);
    j.roofline = against(again, false);
    whole = true;
  } else {
    j.roofline = against(cached, false);
  }
  j.judged = judged.sol_fraction;
  j.suspect = j.judged > j.margin;

  std::string what;
  if (memory)
    what += fmt::format("memory {:.1f} GB/s (read {:.1f}, copy {:.1f}, triad {:.1f})", now.bandwidth.best() * 1e-9,
                        now.bandwidth.read * 1e-9, now.bandwidth.copy * 1e-9, now.bandwidth.triad * 1e-9);
  if (compute) what += fmt::format("{}peak {:.1f} GFLOP/s", memory ? ", " : "", now.peak * 1e-9);
  j.remeasured = fmt::format(
      "roof re-measured now for {} on all threads, best of {} rounds: {}; spread {:.2f}x between rounds{}",
      data_words(q), now.rounds, what, spread, whole ? "; then the whole ceilings re-measured" : "");
  const auto doubts = cached.doubts();
  if (!doubts.empty()) j.remeasured += "; the cached ceilings are in doubt: " + doubts.front();
  j.detail = fmt::format(
      "{:.1f}% of the speed of light re-measured ({}-bound), {:.1f}% of the cached ceilings; "
      "suspect beyond {:.0f}% (the noise times the roof's spread); {}",
      100 * judged.sol_fraction, judged.bound, 100 * cached_sol, 100 * j.margin, j.remeasured);
  return j;
}

}  // namespace kforge
