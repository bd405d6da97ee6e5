// Statistics of timing samples: the summary (median, spread, outliers) and the Mann-Whitney U
// rank test that tells a change from noise.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "kforge/measure.hpp"

namespace kforge {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Timing summarize(std::vector<double> samples) {
  Timing t;
  t.samples = samples;
  if (samples.empty()) return t;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  t.median_s = median_of(samples);
  t.min_s = samples.front();
  t.max_s = samples.back();
  t.mean_s = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double s : samples) ss += (s - t.mean_s) * (s - t.mean_s);
  t.stdev_s = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
  std::vector<double> dev(n);
  for (std::size_t i = 0; i < n; ++i) dev[i] = std::fabs(samples[i] - t.median_s);
  t.mad_s = median_of(dev);
  const double sigma = std::max(1.4826 * t.mad_s, 1e-3 * t.median_s);
  for (double d : dev) t.outliers += d > 3 * sigma ? 1 : 0;
  return t;
}

nlohmann::json Timing::to_json() const {
  return {{"median_s", median_s},     {"min_s", min_s},
          {"max_s", max_s},           {"mean_s", mean_s},
          {"stdev_s", stdev_s},       {"rel_stdev", rel_stdev()},
          {"mad_s", mad_s},           {"outliers", outliers},
          {"repetitions", repetitions()}, {"noise_target_met", noise_target_met},
          {"stop_reason", stop_reason}, {"samples", samples}};
}

RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
  RankTest r;
  r.n_a = a.size();
  r.n_b = b.size();
  if (a.empty() || b.empty()) return r;
  // Ranks over the pooled samples, ties sharing their average rank.
  std::vector<std::pair<double, int>> pooled;
  for (double x : a) pooled.emplace_back(x, 0);
  for (double x : b) pooled.emplace_back(x, 1);
  std::sort(pooled.begin(), pooled.end());
  const double n = static_cast<double>(pooled.size());
  double rank_sum_a = 0, tie_term = 0;
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i), avg_rank = 0.5 * static_cast<double>(i + 1 + j);
    for (std::size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rank_sum_a += avg_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  const double na = static_cast<double>(r.n_a), nb = static_cast<double>(r.n_b);
  r.u = rank_sum_a - na * (na + 1) / 2;
  const double mu = na * nb / 2;
  const double var = na * nb / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return r;  // every value tied: no evidence of a difference
  const double dist = std::max(0.0, std::fabs(r.u - mu) - 0.5);
  r.z = (r.u >= mu ? 1 : -1) * dist / std::sqrt(var);
  r.p_value = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));
  return r;
}

SampleComparison compare_samples(const std::vector<double>& a, const std::vector<double>& b,
                           double alpha) {
  SampleComparison c;
  c.test = mann_whitney(a, b);
  const double ma = median_of(a);
  c.ratio = ma > 0 ? median_of(b) / ma : 0;
  c.differ = c.test.p_value < alpha;
  c.enough_samples = a.size() >= 9 && b.size() >= 9;
  return c;
}

std::string SampleComparison::verdict() const {
  if (!differ) return "same within noise";
  return ratio < 1 ? "faster" : "slower";
}

}  // namespace kforge
