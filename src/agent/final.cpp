// The end of a run: the best candidate verified again with inputs and shapes of a seed it never
// saw, timed again beside the baseline, and written out as a file; and the run's summary.
#include <fmt/format.h>

#include "agent/session.hpp"
#include "kforge/util.hpp"

namespace kforge::agent {

void final_check(Session& s, AgentSummary& sum, nlohmann::ordered_json& meta) {
  if (!s.best) return;
  sum.best = *s.best;
  const Candidate c = candidate_of(s, *s.best);
  const auto file = s.o.out_dir / ("best" + source_extension(c.lang));
  write_file_atomic(file, c.source);
  sum.best_file = file;
  auto& agent = meta["agent"];
  if (s.evaluated == 0 && agent.contains("final") && agent["final"].value("candidate_hash", "") == c.hash) {
    sum.final_check = agent["final"]["feedback"];
    sum.final_passed = sum.final_check.value("passed", false);
    sum.final_from_journal = true;
    return;
  }
  say(s.o, fmt::format("final: attempt {} verified again with fresh inputs and timed again", s.best->attempt));
  const EvalRequest req = request_for(s, c, derived_seed(s.o.seed, "final " + c.hash));
  const std::string replay = write_candidate_files(s, c, req, "best");
  const EvalResult r = evaluate_isolated(req, s.o.limits);
  const Judged j = judge(r, feedback_context(s, c, "best", replay));
  StoredEvaluation e = StoredEvaluation::from(req, r, machine_fingerprint(r.backend, r.device));
  e.kernel = fmt::format("{}.agent.{}", s.p.name(), attempt_stem(s.best->attempt));  // the same row, re-timed
  s.store.record(s.run_id, e);
  sum.final_check = j.feedback;
  sum.final_passed = r.passed();
  agent["final"] = {{"candidate_hash", c.hash}, {"attempt", s.best->attempt}, {"feedback", j.feedback}};
  s.store.set_run_meta(s.run_id, meta);
  say(s.o, "final: " + j.summary);
}

}  // namespace kforge::agent

namespace kforge {

nlohmann::json AgentSummary::to_json() const {
  nlohmann::json j = {{"run", run_id}, {"run_key", run_key}, {"resumed", resumed}, {"attempts", attempts},
                      {"evaluated", evaluated}, {"from_journal", from_journal}, {"stop_reason", stop_reason},
                      {"final_passed", final_passed}, {"final_from_journal", final_from_journal},
                      {"final", final_check}, {"best_file", best_file.string()}};
  if (best) {
    j["best"] = best->to_json();
    j["best"].erase("source");
    j["best"].erase("feedback");
  } else {
    j["best"] = nullptr;
  }
  return j;
}

}  // namespace kforge
