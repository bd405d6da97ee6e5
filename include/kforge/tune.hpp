#pragma once
// Tuning: a strategy proposes configurations of a kernel's space, each goes through the gates
// (evaluate), and the fastest that passed wins. The default configuration is always tried
// first, so tuning never ends worse than not tuning.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kforge/evaluate.hpp"
#include "kforge/strategy.hpp"

namespace kforge {

// Every valid configuration, in odometer order (the first parameter varies slowest), at most
// `limit` of them.
[[nodiscard]] std::vector<ParamValues> valid_configs(const KernelSpec& k, const Sizes& s,
                                                     std::size_t limit = 1u << 20);
// Up to `count` distinct valid configurations drawn uniformly from the product (rejection
// sampling, so a huge space is never materialized). Seeded: same seed, same draws.
[[nodiscard]] std::vector<ParamValues> sample_configs(const KernelSpec& k, const Sizes& s,
                                                      std::size_t count, std::uint64_t seed);

// `spec` as "NAME=V1|V2|...,NAME=..." keeps only those values of each named parameter (a
// default outside them moves to the first one kept). Throws UsageError naming a parameter the
// kernel lacks or a value not in its list.
[[nodiscard]] KernelSpec restrict_space(const KernelSpec& k, const std::string& spec);

struct TuneOptions {
  std::string strategy = "bayes";   // see strategy_names(); `kforge tune`'s default too
  int budget = 20;                  // evaluations, the default configuration included
  std::uint64_t seed = 1;
  double time_limit_s = 0;          // stop once this much evaluation time is spent (0: none)
  StrategyOptions strategy_options; // its budget is set from `budget`
  // What the search minimizes and the winner is chosen by: see objective_value.
  std::string objective = "time";
  // Results store hooks (kforge/store.hpp), both optional: `lookup` answers a request from
  // stored results, which then is not evaluated again (resume); `record` receives each
  // evaluation that ran, as soon as it ends.
  std::function<std::optional<EvalResult>(const EvalRequest&)> lookup;
  std::function<void(const EvalRequest&, const EvalResult&)> record;
  // Evaluate each configuration in a kforge-worker subprocess (evaluate_isolated): for kernels
  // that are not kforge's own, such as a problem file's.
  bool isolate = false;
  // Asked before each evaluation: true ends the search there, with stopped = "cancelled" (the
  // MCP server's notifications/cancelled). Evaluations already run stay in the result.
  std::function<bool()> stop;
};

// The tuner's objectives: "time" (the median seconds), "energy" (joules per run, measured or
// modelled: EvalResult::energy says which) and "edp" (energy-delay product: joules x seconds).
[[nodiscard]] const std::vector<std::string>& objective_names();
// Throws UsageError naming the objective and the choices when it is none of them.
void check_objective(const std::string& objective);
// The value to minimize; none when the result has no timing (or no energy for energy and edp).
[[nodiscard]] std::optional<double> objective_value(const EvalResult& e, const std::string& objective);

struct TuneResult {
  std::vector<EvalResult> evaluations;  // in the order run
  int best = -1;                        // index of the fastest passed evaluation, -1 if none
  std::uint64_t space_size = 0;         // valid configurations
  std::string stopped;                  // budget | time | exhausted | cancelled
  nlohmann::json strategy_report;       // e.g. the MAP-Elites archive
};

using TuneProgress = std::function<void(int done, int total, const EvalResult& last)>;

// `base` fixes problem, kernel, sizes, dtype and backend; its params are ignored. The strategy
// runs through ask/tell over the kernel's valid space; the default configuration is evaluated
// first. Evaluations run in this process with `bench` on (library kernels are trusted).
[[nodiscard]] TuneResult tune(const EvalRequest& base, Backend& backend, const TuneOptions& o,
                              const TuneProgress& progress = {});

}  // namespace kforge
