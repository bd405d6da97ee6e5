// The loop: start the proposer, send the task, read a batch of candidates, evaluate them (up to
// --parallel at once, each in its own kforge-worker; under mpirun spread over the ranks through
// AgentOptions::evaluate_batch), journal each the moment it ends, answer
// with one feedback per candidate, and at the end re-verify and re-time the best (final.cpp).
#include <chrono>
#include <future>
#include <optional>

#include <fmt/format.h>

#include "agent/diff.hpp"
#include "agent/proposer_process.hpp"
#include "agent/session.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge::agent {
namespace {

std::string run_key(const AgentOptions& o) {
  nlohmann::json key = {{"problem", o.problem}, {"sizes", o.sizes}, {"scalars", o.scalars},
                        {"dtype", dtype_name(o.dtype)}, {"backend", o.backend},
                        {"proposer", o.proposer}, {"seed", o.seed}};
  // Verdicts without a check are not the journal of a run with it, nor the other way round
  // (runs with the defaults keep the keys they had before the options existed).
  if (!o.index_width) key["index_width"] = false;
  if (o.tsan) key["tsan"] = true;
  return hex64(hash64(key.dump()));
}

// One candidate of a batch on its way through the gates.
struct Pending {
  int attempt = 0;
  Candidate c;
  std::string diff, stem, replay;
  std::optional<EvalRequest> req;
  nlohmann::json feedback;  // filled when it ends
  bool from_journal = false;
};

// Judges and journals a candidate whose evaluation ended.
// `where`: the evaluator, for the log ("rank 1"); empty here.
void finish(Session& s, Pending& b, const EvalResult& r, const std::string& where = {}) {
  const Judged j = judge(r, feedback_context(s, b.c, b.stem, b.replay));
  b.feedback = journal_attempt(s, b.attempt, b.c, j, b.diff, &*b.req, &r).feedback;
  ++s.evaluated;
  say(s.o, fmt::format("attempt {}{}: {}", b.attempt, where.empty() ? "" : " (" + where + ")", j.summary));
}

// Here: every candidate at once, one kforge-worker each, journaled in the order they end.
void evaluate_here(Session& s, const std::vector<Pending*>& run) {
  std::vector<std::future<EvalResult>> results;
  for (Pending* b : run)
    results.push_back(std::async(std::launch::async, [req = *b->req, limits = s.o.limits] {
      return evaluate_isolated(req, limits);
    }));
  for (bool waiting = true; waiting;) {
    waiting = false;
    for (std::size_t i = 0; i < run.size(); ++i) {
      if (!results[i].valid()) continue;
      if (results[i].wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
        waiting = true;
        continue;
      }
      finish(s, *run[i], results[i].get());
    }
  }
}

// Evaluates a batch: journaled candidates are answered from the journal, the others are
// evaluated (here, or where AgentOptions::evaluate_batch sends them: MPI ranks) and each is
// journaled the moment it ends.
void evaluate_batch(Session& s, std::vector<Pending>& batch) {
  std::vector<Pending*> run;  // the candidates to evaluate, in batch order
  for (auto& b : batch) {
    if (auto it = s.journal.find(b.c.hash); it != s.journal.end()) {
      b.from_journal = true;
      b.attempt = it->second.attempt;
      b.feedback = it->second.feedback;
      ++s.from_journal;
      say(s.o, fmt::format("attempt {}: from the journal ({})", b.attempt, it->second.disposition));
      continue;
    }
    // A new candidate keeps its place in the sequence unless a journaled attempt has that
    // number (a proposer that sends other candidates after a resume): then it comes after all.
    if (s.numbers.count(b.attempt)) b.attempt = *s.numbers.rbegin() + 1;
    s.numbers.insert(b.attempt);
    b.stem = attempt_stem(b.attempt);
    if (const std::string why = static_check(b.c, s.lang); !why.empty()) {
      const Judged j = rejected(why);
      b.feedback = journal_attempt(s, b.attempt, b.c, j, b.diff, nullptr, nullptr).feedback;
      say(s.o, fmt::format("attempt {}: {}", b.attempt, j.summary));
      continue;
    }
    b.req = request_for(s, b.c, derived_seed(s.o.seed, "verify " + b.c.hash));
    b.replay = write_candidate_files(s, b.c, *b.req, b.stem);
    run.push_back(&b);
  }
  if (run.empty()) return;
  if (!s.o.evaluate_batch) return evaluate_here(s, run);
  std::vector<EvalRequest> requests;
  for (const Pending* b : run) requests.push_back(*b->req);
  s.o.evaluate_batch(requests, s.o.limits, [&](std::size_t i, EvalResult r, const std::string& where) {
    finish(s, *run.at(i), r, where);
  });
}

std::vector<Pending> read_batch(Session& s, ProposerProcess& proposer, int want, int& next_attempt,
                                std::optional<std::string>& stop) {
  std::vector<Pending> batch;
  const std::string best_source = s.best ? s.best->source : std::string();
  while (static_cast<int>(batch.size()) < want) {
    const auto line = proposer.receive(s.o.proposer_timeout_s);
    if (!line)
      throw ProposerError(fmt::format("the proposer ended its output ({}) before sending candidate {} of {}; "
                                      "what ran before is journaled: run the same command to resume",
                                      proposer.status(), next_attempt, s.o.budget));
    if (trim(*line).empty()) continue;
    Message m = parse_message(*line, s.p, s.lang, s.entry);
    if (m.stop) {
      stop = m.reason.empty() ? "the proposer stopped" : "the proposer stopped: " + m.reason;
      break;
    }
    Pending b;
    b.attempt = next_attempt++;
    b.c = std::move(*m.candidate);
    if (s.best) b.diff = line_diff(best_source, b.c.source);
    batch.push_back(std::move(b));
  }
  return batch;
}

nlohmann::json recent(const Session& s) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : s.recent_failures) a.push_back(f);
  return a;
}

}  // namespace
}  // namespace kforge::agent

namespace kforge {
using namespace agent;

AgentSummary run_agent(const AgentOptions& o, Store& store) {
  if (o.budget < 1) throw UsageError("--budget must be at least 1");
  if (o.parallel < 1) throw UsageError("--parallel must be at least 1");
  if (trim(o.proposer).empty()) throw UsageError("--proposer needs a command");
  const auto problem = find_problem(o.problem);
  Session s(o, *problem, store);
  s.lang = backend_lang(o.backend);
  s.entry = default_entry(*problem, s.lang, o.sizes);
  s.counters = hardware_counters();
  std::filesystem::create_directories(o.out_dir);

  AgentSummary sum;
  sum.run_key = run_key(o);
  nlohmann::ordered_json meta;
  if (const auto run = store.find_agent_run(sum.run_key)) {
    sum.resumed = true;
    s.run_id = run->id;
    meta = run->meta;
    s.baseline = Baseline::from_json(meta["agent"]["baseline"]);
    for (const auto& a : store.agent_attempts(s.run_id)) s.account(a);
    say(o, fmt::format("resuming run {}: {} attempt(s) in the journal", s.run_id, s.journal.size()));
  } else {
    say(o, "measuring the baseline and the speed of light at these sizes");
    s.baseline = measure_baseline(o, *problem);
    meta["agent"] = {{"run_key", sum.run_key}, {"problem", o.problem}, {"proposer", o.proposer},
                     {"seed", o.seed}, {"sizes", o.sizes}, {"dtype", dtype_name(o.dtype)},
                     {"backend", o.backend}, {"baseline", s.baseline.to_json()}};
    s.run_id = store.begin_run(o.command, machine_fingerprint(o.backend, s.baseline.device), meta);
  }
  sum.run_id = s.run_id;

  nlohmann::json task = task_message(o, *problem, s.baseline, s.entry, s.counters);
  int remaining = o.budget, next_attempt = 1;
  std::optional<std::string> stop;
  {
    ProposerProcess proposer(o.proposer);
    task["best"] = s.best_json();
    task["remaining"] = remaining;
    task["batch"] = std::min(o.parallel, remaining);
    task["recent_failures"] = recent(s);
    proposer.send(task.dump());
    while (remaining > 0 && !stop) {
      std::vector<Pending> batch = read_batch(s, proposer, std::min(o.parallel, remaining), next_attempt, stop);
      if (batch.empty()) break;
      evaluate_batch(s, batch);
      remaining -= static_cast<int>(batch.size());
      const int next = stop || remaining == 0 ? 0 : std::min(o.parallel, remaining);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        nlohmann::json f = {{"type", "feedback"}, {"attempt", batch[i].attempt},
                            {"candidate_hash", batch[i].c.hash}, {"from_journal", batch[i].from_journal}};
        f.update(batch[i].feedback);
        if (!batch[i].diff.empty()) f["diff_vs_best"] = batch[i].diff;
        f["best"] = s.best_json();
        f["remaining"] = remaining;
        f["batch_index"] = i;
        f["batch_size"] = batch.size();
        f["next_batch"] = next;
        f["recent_failures"] = recent(s);
        proposer.send(f.dump());
      }
    }
    sum.stop_reason = stop ? *stop : "budget";
    try {
      proposer.send(nlohmann::json{{"type", "done"}, {"reason", sum.stop_reason}, {"best", s.best_json()}}.dump());
    } catch (const ProposerError&) {
      // It may have left after its last feedback; that is its right.
    }
  }
  sum.attempts = next_attempt - 1;
  sum.evaluated = s.evaluated;
  sum.from_journal = s.from_journal;
  final_check(s, sum, meta);
  return sum;
}

}  // namespace kforge
