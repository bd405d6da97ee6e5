#pragma once
// Timing: warm-up, then repetitions until the noise is small or the budget is spent; the
// median with its spread. Plus the machine's ceilings and the speed-of-light fraction.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kforge/dtype.hpp"

namespace kforge {

class Backend;

struct MeasureOptions {
  int warmup = 2;
  int min_repetitions = 10;
  int max_repetitions = 1000;
  double min_time_s = 0.3;      // keep sampling at least this long...
  double max_time_s = 5.0;      // ...and never longer than this
  double target_rel_stdev = 0.005;  // stop early once the relative stdev is below this
};

struct Timing {
  std::vector<double> samples;  // seconds, in the order measured
  double median_s = 0, min_s = 0, mean_s = 0, stdev_s = 0;
  bool noise_target_met = false;
  [[nodiscard]] int repetitions() const { return static_cast<int>(samples.size()); }
  [[nodiscard]] nlohmann::json to_json() const;
};

// Summary statistics of samples (median of an even count: the mean of the middle two).
[[nodiscard]] Timing summarize(std::vector<double> samples);
// `once` runs the thing once and returns its seconds on the backend's clock.
[[nodiscard]] Timing measure(const std::function<double()>& once, const MeasureOptions& o = {});

// Two things timed in alternation (a, b, a, b, ...) under one stopping rule that both must
// meet, so a noisy neighbour slows both alike and their ratio stays honest.
struct PairTiming {
  Timing a, b;
};
[[nodiscard]] PairTiming measure_pair(const std::function<double()>& a,
                                      const std::function<double()>& b,
                                      const MeasureOptions& o = {});

// The machine's own speed limits, measured by kforge's micro-benchmarks on a backend's device.
struct Ceilings {
  std::string fingerprint;      // backend, device and build flags the figures belong to
  double bandwidth_bytes_s = 0; // triad over arrays well beyond the last-level cache
  double flops_fp32 = 0;        // FMA chains at the widest SIMD, all threads
  double flops_fp64 = 0;
  [[nodiscard]] double flops_for(DType t) const;  // fp16/bf16 compute in fp32 here
  [[nodiscard]] nlohmann::json to_json() const;
};

// Cached per fingerprint under the cache folder; `remeasure` ignores the cache.
[[nodiscard]] Ceilings ceilings(Backend& b, bool remeasure = false);

// max(flops / peak_flops, bytes / bandwidth) / seconds; and which bound limits it.
struct Roofline {
  double sol_fraction = 0;
  std::string bound;              // "compute" or "memory"
  double arithmetic_intensity = 0;  // FLOPs per byte
};
[[nodiscard]] Roofline roofline(const Ceilings& c, DType t, double flops, double bytes,
                                double seconds);

}  // namespace kforge
