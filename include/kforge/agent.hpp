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
  double proposer_timeout_s = 300;  // for each line the proposer owes
  std::filesystem::path out_dir;    // every attempt's source and spec, and best.<ext>
  std::string command;              // the command line, for the runs table
  std::function<void(const std::string&)> log;  // one line per event, for a human (stderr)
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

// Runs the loop to its budget or the proposer's stop. Throws ProposerError when the proposer
// breaks the protocol (everything journaled before stays), UsageError for bad options.
[[nodiscard]] AgentSummary run_agent(const AgentOptions& o, Store& store);

}  // namespace kforge
