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

namespace {

bool quiet_enough(const std::vector<double>& samples, double target) {
  const Timing t = summarize(samples);
  return t.mean_s > 0 && t.stdev_s / t.mean_s <= target;
}

// Samples every function in `runs` in turn until the stopping rule holds for all of them:
// at least min_repetitions and min_time_s, then stop once every relative stdev is under the
// target, or once there are 3x the minimum samples and half the time budget is spent (noisy,
// but enough for a trustworthy median), or at max_time_s / max_repetitions.
std::vector<Timing> measure_all(const std::vector<const std::function<double()>*>& runs,
                                const MeasureOptions& o) {
  for (int i = 0; i < o.warmup; ++i)
    for (const auto* r : runs) (*r)();
  std::vector<std::vector<double>> samples(runs.size());
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool met = false;
  for (int n = 1; n <= o.max_repetitions; ++n) {
    for (std::size_t i = 0; i < runs.size(); ++i) samples[i].push_back((*runs[i])());
    if (n < o.min_repetitions) continue;
    met = true;
    for (const auto& s : samples) met = met && quiet_enough(s, o.target_rel_stdev);
    const double t = elapsed();
    if (t >= o.max_time_s || (t >= o.min_time_s && met) ||
        (t >= o.min_time_s && n >= 3 * o.min_repetitions && t >= 0.5 * o.max_time_s))
      break;
  }
  std::vector<Timing> out;
  for (auto& s : samples) {
    out.push_back(summarize(std::move(s)));
    out.back().noise_target_met = quiet_enough(out.back().samples, o.target_rel_stdev);
  }
  return out;
}

}  // namespace

Timing measure(const std::function<double()>& once, const MeasureOptions& o) {
  return measure_all({&once}, o).front();
}

PairTiming measure_pair(const std::function<double()>& a, const std::function<double()>& b,
                        const MeasureOptions& o) {
  auto t = measure_all({&a, &b}, o);
  return {std::move(t[0]), std::move(t[1])};
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
