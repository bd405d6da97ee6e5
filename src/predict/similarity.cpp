// Kernel similarity (kforge/predict.hpp): an embedding of feature rows, nearest neighbours in it,
// and k representatives (one random member of each of k clusters), without looking at any time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kforge/error.hpp"
#include "kforge/predict.hpp"
#include "kforge/rng.hpp"

namespace kforge {
namespace {

double distance2(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return d;
}

// The nearest of `centres` to `p`.
std::size_t closest(const std::vector<double>& p, const std::vector<std::vector<double>>& centres) {
  std::size_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < centres.size(); ++c)
    if (const double d = distance2(p, centres[c]); d < best_d) best_d = d, best = c;
  return best;
}

}  // namespace

Embedding embed(const std::vector<Features>& rows) {
  Embedding e;
  if (rows.empty()) return e;
  e.names = rows.front().names;
  for (const auto& r : rows)
    if (r.names != e.names) throw UsageError("every configuration must have the same features to be embedded");
  const std::size_t n = rows.size(), dims = e.names.size();
  e.points.assign(n, std::vector<double>(dims));
  for (std::size_t d = 0; d < dims; ++d) {
    // Sizes, tiles and counts act by ratio: log when every value is positive. Then z-scores, so
    // that no feature dominates by its unit; a constant feature contributes nothing.
    bool positive = true;
    for (const auto& r : rows) positive = positive && r.values[d] > 0;
    double sum = 0, sum2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = positive ? std::log(rows[i].values[d]) : rows[i].values[d];
      e.points[i][d] = v;
      sum += v, sum2 += v * v;
    }
    const double mean = sum / static_cast<double>(n);
    const double sd = std::sqrt(std::max(0.0, sum2 / static_cast<double>(n) - mean * mean));
    for (std::size_t i = 0; i < n; ++i) e.points[i][d] = sd > 1e-12 ? (e.points[i][d] - mean) / sd : 0.0;
  }
  return e;
}

std::vector<std::size_t> nearest(const Embedding& e, const std::vector<double>& point, std::size_t k) {
  std::vector<std::size_t> order(e.points.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  k = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::size_t a, std::size_t b) { return distance2(e.points[a], point) < distance2(e.points[b], point); });
  order.resize(k);
  return order;
}

Representatives representatives(const Embedding& e, std::size_t k, std::uint64_t seed) {
  const std::size_t n = e.points.size();
  if (k == 0 || n == 0) throw UsageError("representatives need k >= 1 and a non-empty set");
  k = std::min(k, n);
  std::uint64_t draws = 0;
  auto unit = [&] { return random_unit(seed, 0x5151, draws++); };
  // k-means++ seeding: each next centre drawn with probability proportional to its squared
  // distance from the centres so far.
  std::vector<std::vector<double>> centres{e.points[std::min(n - 1, static_cast<std::size_t>(unit() * static_cast<double>(n)))]};
  std::vector<double> d2(n);
  while (centres.size() < k) {
    double total = 0;
    for (std::size_t i = 0; i < n; ++i) total += d2[i] = distance2(e.points[i], centres[closest(e.points[i], centres)]);
    if (total <= 0) break;  // fewer distinct points than k
    double u = unit() * total;
    std::size_t pick = n - 1;
    for (std::size_t i = 0; i < n; ++i)
      if ((u -= d2[i]) < 0) { pick = i; break; }
    centres.push_back(e.points[pick]);
  }
  // Lloyd's iterations.
  std::vector<std::size_t> label(n, 0);
  for (int it = 0; it < 30; ++it) {
    bool moved = false;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t c = closest(e.points[i], centres);
      moved = moved || c != label[i];
      label[i] = c;
    }
    std::vector<std::vector<double>> sum(centres.size(), std::vector<double>(e.names.size(), 0.0));
    std::vector<std::size_t> count(centres.size(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      ++count[label[i]];
      for (std::size_t d = 0; d < e.names.size(); ++d) sum[label[i]][d] += e.points[i][d];
    }
    for (std::size_t c = 0; c < centres.size(); ++c)
      if (count[c] > 0)
        for (std::size_t d = 0; d < e.names.size(); ++d) centres[c][d] = sum[c][d] / static_cast<double>(count[c]);
    if (!moved && it > 0) break;
  }
  // Each cluster is a stratum: its representative is one of its members drawn at random, so the
  // estimate sum(time x weight) is unbiased (a cluster's most central member is not: where time
  // is convex in the features, the centre's time is below the cluster's mean).
  Representatives r;
  for (std::size_t c = 0; c < centres.size(); ++c) {
    std::vector<std::size_t> members;
    for (std::size_t i = 0; i < n; ++i)
      if (label[i] == c) members.push_back(i);
    if (members.empty()) continue;
    r.members.push_back(members[std::min(members.size() - 1, static_cast<std::size_t>(unit() * static_cast<double>(members.size())))]);
    r.weights.push_back(members.size());
  }
  return r;
}

double estimate_total(const Representatives& r, const std::vector<double>& time) {
  double total = 0;
  for (std::size_t i = 0; i < r.members.size(); ++i) total += time.at(r.members[i]) * static_cast<double>(r.weights[i]);
  return total;
}

}  // namespace kforge
