// Parameter prediction for sizes never tuned: rows that carry the problem's features (sizes,
// FLOPs, bytes) beside the configuration's, so one model learns how the best configuration
// moves with size; and the baseline it must beat, the nearest tuned size's winner.
#include <cmath>
#include <limits>
#include <set>

#include "kforge/error.hpp"
#include "kforge/predict.hpp"
#include "kforge/replay.hpp"

namespace kforge {

Features join(const Features& a, const Features& b) {
  Features f = a;
  f.names.insert(f.names.end(), b.names.begin(), b.names.end());
  f.values.insert(f.values.end(), b.values.begin(), b.values.end());
  return f;
}

Dataset sized_dataset(const RecordedSpace& r, const Features& problem) {
  Dataset d;
  for (std::size_t k = 0; k < r.space.size(); ++k) {
    if (!r.time_ms[k]) continue;  // a failed configuration: the model predicts working ones
    d.rows.push_back(join(problem, config_features(r.space, r.space.at(k))));
    d.time_ms.push_back(*r.time_ms[k]);
  }
  return d;
}

std::vector<double> predict_space_at(const PerfModel& m, const Features& problem, const Space& space) {
  std::vector<Features> rows;
  rows.reserve(space.size());
  for (std::size_t k = 0; k < space.size(); ++k) rows.push_back(join(problem, config_features(space, space.at(k))));
  return m.predict_log(rows);
}

std::size_t argmin(const std::vector<double>& v) {
  if (v.empty()) throw UsageError("nothing to choose from: the space is empty");
  std::size_t best = 0;
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[best]) best = i;
  return best;
}

std::size_t nearest_size(const std::vector<Sizes>& tuned, const Sizes& target) {
  if (tuned.empty()) throw UsageError("no tuned size to take a configuration from");
  std::set<std::string> names;
  for (const Sizes& s : tuned)
    for (const auto& [n, v] : s) names.insert(n);
  for (const auto& [n, v] : target) names.insert(n);
  auto log_of = [](const Sizes& s, const std::string& n) {
    auto it = s.find(n);
    return it == s.end() || it->second < 1 ? 0.0 : std::log2(static_cast<double>(it->second));
  };
  std::size_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < tuned.size(); ++i) {
    double d = 0;
    for (const std::string& n : names) d += std::pow(log_of(tuned[i], n) - log_of(target, n), 2);
    if (d < best_d) best_d = d, best = i;  // the first of equally near ones
  }
  return best;
}

bool knows_sizes(const PerfModel& m) {
  for (const std::string& n : m.feature_names())
    if (n.rfind("size_", 0) == 0) return true;
  return false;
}

}  // namespace kforge
