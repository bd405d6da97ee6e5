#include "kforge/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

namespace kforge {

Timing summarize(std::vector<double> samples) {
  Timing t;
  t.samples = samples;
  if (samples.empty()) return t;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  t.median_s = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  t.min_s = samples.front();
  t.mean_s = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  double ss = 0;
  for (double s : samples) ss += (s - t.mean_s) * (s - t.mean_s);
  t.stdev_s = n > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  return t;
}

Timing measure(const std::function<double()>& once, const MeasureOptions& o) {
  for (int i = 0; i < o.warmup; ++i) once();
  std::vector<double> samples;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool met = false;
  while (static_cast<int>(samples.size()) < o.max_repetitions) {
    samples.push_back(once());
    const int n = static_cast<int>(samples.size());
    if (n < o.min_repetitions) continue;
    const Timing t = summarize(samples);
    met = t.mean_s > 0 && t.stdev_s / t.mean_s <= o.target_rel_stdev;
    if (elapsed() >= o.max_time_s) break;
    if (elapsed() >= o.min_time_s && met) break;
    if (elapsed() >= o.min_time_s && n >= 3 * o.min_repetitions &&
        elapsed() >= 0.5 * o.max_time_s)
      break;  // noisy, but enough samples for a trustworthy median
  }
  Timing t = summarize(samples);
  t.noise_target_met = met;
  return t;
}

nlohmann::json Timing::to_json() const {
  return {{"median_s", median_s}, {"min_s", min_s},   {"mean_s", mean_s},
          {"stdev_s", stdev_s},   {"repetitions", repetitions()},
          {"noise_target_met", noise_target_met}, {"samples", samples}};
}

double Ceilings::flops_for(DType t) const { return t == DType::fp64 ? flops_fp64 : flops_fp32; }

nlohmann::json Ceilings::to_json() const {
  return {{"fingerprint", fingerprint},
          {"bandwidth_GBs", bandwidth_bytes_s * 1e-9},
          {"fp32_GFLOPs", flops_fp32 * 1e-9},
          {"fp64_GFLOPs", flops_fp64 * 1e-9}};
}

Roofline roofline(const Ceilings& c, DType t, double flops, double bytes, double seconds) {
  Roofline r;
  const double t_compute = c.flops_for(t) > 0 ? flops / c.flops_for(t) : 0;
  const double t_memory = c.bandwidth_bytes_s > 0 ? bytes / c.bandwidth_bytes_s : 0;
  r.bound = t_compute >= t_memory ? "compute" : "memory";
  r.sol_fraction = seconds > 0 ? std::max(t_compute, t_memory) / seconds : 0;
  r.arithmetic_intensity = bytes > 0 ? flops / bytes : 0;
  return r;
}

}  // namespace kforge
