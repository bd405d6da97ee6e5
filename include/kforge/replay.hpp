#pragma once
// Recorded spaces: a Kernel Tuner cache file (JSON: tune_params_keys, tune_params and a
// `cache` of configurations, each with its recorded `time` in ms or an error string such as
// "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig") replayed as an objective.
// The space is the configurations present in the cache; each evaluation returns the recorded
// time (or failure) and spends the recorded compile + verification + benchmark time.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/evaluate.hpp"
#include "kforge/search.hpp"

namespace kforge {

struct RecordedSpace {
  std::string path, device, kernel;
  Sizes sizes;  // the problem's sizes, where the file says (kforge's records do; Kernel Tuner's not)
  Space space;
  std::vector<std::optional<double>> time_ms;  // by rank in `space`; none: a recorded failure
  std::vector<std::string> error;              // by rank; the recorded error string
  std::vector<double> cost_s;                  // by rank; what evaluating it cost
  double optimum_ms = 0;                       // the best recorded time
  int failed = 0;

  // Throws UsageError naming the file and the entry that is malformed. A cache cut short by
  // an interrupted run (no closing braces) is read up to its last complete entry.
  static RecordedSpace load(const std::string& path);
  static RecordedSpace from_json(const nlohmann::json& j, const std::string& path = "cache");
  [[nodiscard]] Outcome evaluate(const Config& c) const;
};

struct ReplayResult {
  std::string strategy;
  std::uint64_t seed = 0;
  SearchTrace trace;
  double optimum_ms = 0, best_ms = 0, ratio = 0;  // ratio: best / optimum (0: nothing passed)
  int to_within_5 = -1, to_within_1 = -1;         // evaluations to within 5% / 1%, -1: never
  nlohmann::json report;                          // the strategy's own report
  [[nodiscard]] nlohmann::json to_json(const Space& space) const;
};

[[nodiscard]] ReplayResult replay(const RecordedSpace& r, const std::string& strategy,
                                  const Budget& budget, std::uint64_t seed,
                                  const StrategyOptions& o = {});

// Kernel Tuner cache JSON of brute-force (or any) results of one kernel, for replay later:
// time in ms (the median), failures as Kernel Tuner's error strings.
[[nodiscard]] nlohmann::json kernel_tuner_cache(const KernelSpec& k, const Sizes& sizes,
                                                const std::string& device,
                                                const std::vector<EvalResult>& results);

}  // namespace kforge
