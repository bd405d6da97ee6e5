#pragma once
// One `kforge agent` run's state, shared by the loop (loop.cpp) and the attempts (attempt.cpp):
// the problem, the journal read back from the store, the best so far and the recent failures.
#include <deque>
#include <map>
#include <set>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/candidate.hpp"
#include "agent/feedback.hpp"
#include "agent/task.hpp"
#include "kforge/agent.hpp"

namespace kforge::agent {

struct Session {
  Session(const AgentOptions& opts, const Problem& problem, Store& st) : o(opts), p(problem), store(st) {}
  const AgentOptions& o;
  const Problem& p;
  Store& store;
  std::int64_t run_id = 0;
  Lang lang = Lang::cpp;
  std::string entry, counters;
  Baseline baseline;
  std::map<std::string, AgentAttempt> journal;  // by candidate hash
  std::optional<AgentAttempt> best;             // the fastest that passed
  std::deque<nlohmann::json> recent_failures;   // the last few, oldest first
  int evaluated = 0, from_journal = 0;
  std::set<int> numbers;  // the attempt numbers journaled

  // Takes `a` into the best so far and the recent failures.
  void account(const AgentAttempt& a);
  [[nodiscard]] nlohmann::json best_json() const;  // null when nothing passed yet
};

// The file stem of attempt `n` in the output folder ("attempt-007") and a source extension.
[[nodiscard]] std::string attempt_stem(int n);
[[nodiscard]] std::string source_extension(Lang l);

// A request for a candidate: thorough verification under `verify_seed` (never sent in the task,
// so the fuzzed shapes are held out), then timing beside the problem's baseline.
[[nodiscard]] EvalRequest request_for(const Session& s, const Candidate& c, std::uint64_t verify_seed);
// Writes the candidate's source and spec under the output folder; returns the `kforge eval`
// line that replays the request's verdict.
std::string write_candidate_files(const Session& s, const Candidate& c, const EvalRequest& req,
                                  const std::string& stem);
// The feedback context for a candidate written as `stem`.
[[nodiscard]] FeedbackContext feedback_context(const Session& s, const Candidate& c, const std::string& stem,
                                               const std::string& replay);
// Journals an attempt (its evaluation too, when one ran) in one transaction each, and accounts
// for it. Returns it as stored.
AgentAttempt journal_attempt(Session& s, int attempt, const Candidate& c, const Judged& j,
                             const std::string& diff, const EvalRequest* req, const EvalResult* r);
// A seed derived from the run's for one purpose ("verify HASH", "final HASH"): never in the task.
[[nodiscard]] std::uint64_t derived_seed(std::uint64_t seed, const std::string& what);
// One line of progress for a human, when the options ask for it.
void say(const AgentOptions& o, const std::string& line);
// Re-verifies and re-times the best, writes it out, and keeps the verdict in the run's meta; a
// finished run's verdict is reused when nothing was evaluated since.
void final_check(Session& s, AgentSummary& sum, nlohmann::ordered_json& meta);

// The candidate a journaled attempt was (its source and message back together).
[[nodiscard]] Candidate candidate_of(const Session& s, const AgentAttempt& a);

}  // namespace kforge::agent
