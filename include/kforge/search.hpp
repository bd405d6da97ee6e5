#pragma once
// Drives a strategy through ask/tell against any objective (a live backend or a recorded
// space) until a budget runs out: a number of evaluations, a time limit in seconds of
// measured (or recorded) time, or a target within a fraction of a known optimum.
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kforge/strategy.hpp"

namespace kforge {

struct Budget {
  int evaluations = 100;                // including any configurations evaluated first
  double seconds = 0;                   // 0: no time limit
  std::optional<double> optimum;        // a known optimum of the objective...
  double within = 0.0;                  // ...stop once best <= optimum * (1 + within)
  // Asked before each evaluation; true stops the search there ("cancelled"), e.g. a client that
  // cancelled a long tuning run. The evaluation in flight always finishes first.
  std::function<bool()> stop;
};

struct Outcome {
  std::optional<double> objective;  // none: failed
  double cost_s = 0;                // time this evaluation spent
};

struct Step {
  Config config;
  std::optional<double> objective;
  double cost_s = 0;
  double best = std::numeric_limits<double>::infinity();  // best objective so far
};

struct SearchTrace {
  std::vector<Step> steps;
  int best = -1;            // index of the best step, -1 if none passed
  double spent_s = 0;
  std::string stopped;      // budget | time | target | exhausted | cancelled
  // Steps until the best came within `fraction` of `optimum` (1-based), -1 if never.
  [[nodiscard]] int steps_to_within(double optimum, double fraction) const;
};

using Objective = std::function<Outcome(const Config&)>;
using SearchProgress = std::function<void(const SearchTrace&)>;

// Evaluates `first` (valid configurations, e.g. the kernel's default) before asking.
SearchTrace run_search(Strategy& s, const Objective& f, const Budget& b,
                       const std::vector<Config>& first = {}, const SearchProgress& progress = {});

}  // namespace kforge
