#include "predict/store_data.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "kforge/error.hpp"

namespace kforge {

StoreDataset store_dataset(const Problem& problem, DType dtype, const std::vector<StoredEvaluation>& evaluations) {
  StoreDataset out;
  const std::string want(dtype_name(dtype));
  for (const StoredEvaluation& e : evaluations) {
    if (e.key.problem != problem.name())
      throw UsageError("store_dataset: an evaluation of " + e.key.problem + " among " + problem.name() + "'s");
    // A failed configuration has no time worth learning; the model predicts working ones.
    if (e.disposition != "passed" || !e.median_s || *e.median_s <= 0 || e.key.dtype != want) {
      ++out.skipped;
      continue;
    }
    const Sizes sizes = nlohmann::json::parse(e.key.sizes).get<Sizes>();
    std::vector<std::pair<std::string, double>> params;
    const nlohmann::json stored_params = nlohmann::json::parse(e.key.params);  // outlives the loop
    for (const auto& [name, v] : stored_params.items()) params.emplace_back(name, v.get<double>());
    out.data.rows.push_back(join(problem_features(problem, sizes, dtype), param_features(params)));
    out.data.time_ms.push_back(*e.median_s * 1e3);
    if (std::find(out.sizes.begin(), out.sizes.end(), sizes) == out.sizes.end()) out.sizes.push_back(sizes);
  }
  return out;
}

}  // namespace kforge
