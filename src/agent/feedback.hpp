#pragma once
// The verdict on one attempt, as the proposer reads it: which gate stopped it and why, in terms
// it can act on (the compiler's first errors at its own line numbers; the failed check, shape,
// seed, first bad element and a replay command; or time, speedup and speed-of-light fraction),
// and the arena score (compiled 20 + correct 100 + 100 x speedup).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"

namespace kforge::agent {

struct FeedbackContext {
  const Problem* problem = nullptr;
  Sizes task_sizes;            // what the task showed; any other failing shape was held out
  double baseline_s = 0;       // when the result carries no baseline of its own
  std::string baseline_name;
  std::string counters;        // hardware counters: "unavailable: ..." (counters.hpp)
  std::string source_name;     // the candidate's file, as compile messages should name it
  std::string replay;          // a `kforge eval ...` line that reproduces the verdict
};

struct Judged {
  nlohmann::json feedback;     // the message's verdict fields (the loop adds attempt, best, ...)
  std::string disposition, gate, summary;
  double score = 0;
  std::optional<double> speedup, sol_fraction, median_s;
};

[[nodiscard]] Judged judge(const EvalResult& r, const FeedbackContext& ctx);
// A candidate the static gate refused before any compiler ran.
[[nodiscard]] Judged rejected(const std::string& why);

// The first `max_errors` compiler errors, each {file, line, column, message, excerpt}, with the
// kforge cache path of the source replaced by `source_name`.
[[nodiscard]] nlohmann::json compile_errors(const std::string& log, const std::string& source_name,
                                            int max_errors = 3);

// The hardware counters on this machine, in words: "unavailable: ..." where perf_event_open
// cannot count cycles (no PMU, as in most VMs), never an invented figure.
[[nodiscard]] std::string hardware_counters();

}  // namespace kforge::agent
