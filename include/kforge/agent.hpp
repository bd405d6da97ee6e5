#pragma once
// `kforge agent`: an outside optimizer (any command: a script, an LLM agent) proposes kernel
// sources over JSON lines on its stdin/stdout; kforge runs every candidate through the same
// gates as `kforge eval` (evaluate_isolated), answers with feedback an agent can act on, and
// journals every attempt in the results store so that a killed run resumes without repeating
// one. The protocol and its JSON Schemas: docs/agent.md, docs/schemas/.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/evaluate.hpp"
#include "kforge/store.hpp"

namespace kforge {

// The proposer broke the protocol: it exited, hung, or wrote a line that is not a message.
struct ProposerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AgentOptions {
  std::string problem;
  std::string proposer;         // a shell command line, run with /bin/sh -c
  int budget = 10;              // attempts in all, journaled ones included
  int parallel = 1;             // candidates per batch, evaluated at once (one worker each)
  std::string backend = "cpu";
  Sizes sizes;                  // resolved against the problem's defaults
  Scalars scalars;
  DType dtype = DType::fp32;
  int threads = 0;              // cpu backend threads (0: all cores)
  std::uint64_t seed = 0x6b666f726765ull;  // part of the run key; derives the hidden seeds
  MeasureOptions measure;
  IsolationLimits limits;
  bool index_width = true;       // thorough verification's index_width check (seconds a candidate)
  // Every candidate's thorough verification (and the final check) also runs the race worker:
  // the kernel built with ThreadSanitizer (VerifyOptions::tsan; cpu only). `--tsan`.
  bool tsan = false;
  double proposer_timeout_s = 300;  // for each line the proposer owes
  std::filesystem::path out_dir;    // every attempt's source and spec, and best.<ext>
  std::string command;              // the command line, for the runs table
  std::function<void(const std::string&)> log;  // one line per event, for a human (stderr)
  // Where a batch's candidates are evaluated. Empty: here, one kforge-worker each, all at
  // once. Set (`mpirun -n R kforge agent`: kforge::dist::evaluate_isolated_each): evaluates
  // every request as evaluate_isolated(request, limits) would, somewhere else, and calls
  // done(i, result, where) on the calling thread as each ends, in any order (`where` names the
  // evaluator for the log, e.g. "rank 1").
  using BatchDone = std::function<void(std::size_t i, EvalResult result, const std::string& where)>;
  using BatchEvaluator =
      std::function<void(const std::vector<EvalRequest>& requests, const IsolationLimits& limits, const BatchDone& done)>;
  BatchEvaluator evaluate_batch;
};

struct AgentSummary {
  std::int64_t run_id = 0;
  std::string run_key;
  bool resumed = false;         // the run key was in the journal already
  int attempts = 0, evaluated = 0, from_journal = 0;
  std::string stop_reason;      // "budget", "proposer stopped: ..."
  std::optional<AgentAttempt> best;
  nlohmann::json final_check;   // the best re-verified and re-timed: feedback-shaped; null if none
  bool final_passed = false;
  bool final_from_journal = false;
  std::filesystem::path best_file;
  [[nodiscard]] nlohmann::json to_json() const;
};

// The scores of agent runs over a set of problems, as agent benchmarks publish them. Each problem
// instance (problem, sizes, dtype, backend) counts once, by its latest run; its verdict is the
// run's final check (the best candidate verified again with unseen inputs and shapes, and timed
// again), never an attempt's own: a run whose final check failed is not correct.
struct AgentRunScore {
  std::int64_t run_id = 0;
  std::string problem, sizes, dtype, backend, proposer;
  int attempts = 0;
  bool correct = false;         // the final check passed
  std::optional<double> speedup, sol_fraction;  // of the final check
  double arena = 0;             // compiled 20 + correct 100 + 100 x speedup, of the final check
  std::int64_t superseded = 0;  // earlier runs of the same instance left out
};
struct AgentScores {
  std::vector<AgentRunScore> runs;
  std::vector<std::pair<double, double>> fast_p;  // (p, share of instances): p = 0, 1, 1.5, 2
  double geomean_speedup = 0;   // over the correct instances with a speedup; 0 when none
  double geomean_sol = 0;       // over the correct instances with an SOL fraction; 0 when none
  double mean_arena = 0;
  [[nodiscard]] nlohmann::json to_json() const;
};
// `run_ids` empty: every agent run in the store.
[[nodiscard]] AgentScores agent_scores(const Store& store, const std::vector<std::int64_t>& run_ids = {});

// Runs the loop to its budget or the proposer's stop. Throws ProposerError when the proposer
// breaks the protocol (everything journaled before stays), UsageError for bad options.
[[nodiscard]] AgentSummary run_agent(const AgentOptions& o, Store& store);

}  // namespace kforge
