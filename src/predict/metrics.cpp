// Error measures of a model: rank correlation (does it order configurations right, which is
// what a tuner needs) and MAPE (is the time itself right).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kforge/error.hpp"
#include "kforge/predict.hpp"

namespace kforge {
namespace {

// Ranks 1..n, ties given their average rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j) + 1;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) throw UsageError("spearman needs two equal-length series of 2+ values");
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size()), mean = (n + 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

double mape(const std::vector<double>& predicted, const std::vector<double>& truth) {
  if (predicted.size() != truth.size() || truth.empty()) throw UsageError("mape needs two equal-length, non-empty series");
  double s = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) s += std::abs(predicted[i] - truth[i]) / truth[i];
  return s / static_cast<double>(truth.size());
}

}  // namespace kforge
