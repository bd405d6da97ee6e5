// The agent journal: one row per attempt of a `kforge agent` run (table agent_attempts), written
// in its own transaction the moment the attempt ends, and the run's meta (baseline, final
// verdict). Resume reads it back by the run key kept in runs.meta.agent.run_key.
#include <fmt/format.h>

#include "store/internal.hpp"

namespace kforge {
namespace {

constexpr const char* kAttemptColumns =
    "id, run_id, attempt, candidate_hash, source_hash, lang, source, note, diff, disposition, "
    "candidate, feedback, score, speedup, sol_fraction, median_s, evaluation_id, started, finished";

AgentAttempt read_attempt(const sql::Stmt& s) {
  AgentAttempt a;
  a.id = s.integer(0);
  a.run_id = s.integer(1);
  a.attempt = static_cast<int>(s.integer(2));
  a.candidate_hash = s.text(3);
  a.source_hash = s.text(4);
  a.lang = s.text(5);
  a.source = s.text(6);
  a.note = s.text(7);
  a.diff = s.text(8);
  a.disposition = s.text(9);
  a.candidate = nlohmann::json::parse(s.text(10));
  a.feedback = nlohmann::json::parse(s.text(11));
  a.score = s.real(12);
  a.speedup = s.opt_real(13);
  a.sol_fraction = s.opt_real(14);
  a.median_s = s.opt_real(15);
  if (!s.is_null(16)) a.evaluation_id = s.integer(16);
  a.started = s.text(17);
  a.finished = s.text(18);
  return a;
}

}  // namespace

nlohmann::json AgentAttempt::to_json() const {
  nlohmann::json j = {{"id", id}, {"run_id", run_id}, {"attempt", attempt},
                      {"candidate_hash", candidate_hash}, {"source_hash", source_hash},
                      {"lang", lang}, {"note", note}, {"disposition", disposition},
                      {"score", score}, {"candidate", candidate}, {"feedback", feedback},
                      {"diff", diff}, {"source", source}, {"started", started}, {"finished", finished}};
  j["speedup"] = speedup ? nlohmann::json(*speedup) : nlohmann::json();
  j["sol_fraction"] = sol_fraction ? nlohmann::json(*sol_fraction) : nlohmann::json();
  j["median_s"] = median_s ? nlohmann::json(*median_s) : nlohmann::json();
  j["evaluation_id"] = evaluation_id ? nlohmann::json(*evaluation_id) : nlohmann::json();
  return j;
}

std::optional<RunInfo> Store::find_agent_run(std::string_view run_key) const {
  sql::Stmt s(impl_->db,
              "SELECT id FROM runs WHERE json_extract(meta, '$.agent.run_key') = ?1 ORDER BY id LIMIT 1");
  s.bind(1, run_key);
  if (!s.step()) return std::nullopt;
  return run(s.integer(0));
}

void Store::set_run_meta(std::int64_t run_id, const nlohmann::ordered_json& meta) {
  sql::Transaction t(impl_->db);
  sql::Stmt s(impl_->db, "UPDATE runs SET meta = ?1 WHERE id = ?2");
  s.bind(1, meta.dump()).bind(2, run_id);
  s.step();
  t.commit();
}

std::int64_t Store::record_attempt(const AgentAttempt& a) {
  sql::Transaction t(impl_->db);
  sql::Stmt s(impl_->db, fmt::format(R"SQL(
INSERT INTO agent_attempts ({}) VALUES (NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,
  ?13, ?14, ?15, ?16, ?17, ?18)
ON CONFLICT (run_id, candidate_hash) DO UPDATE SET
  attempt = excluded.attempt, disposition = excluded.disposition, diff = excluded.diff,
  note = excluded.note, candidate = excluded.candidate, feedback = excluded.feedback,
  score = excluded.score, speedup = excluded.speedup, sol_fraction = excluded.sol_fraction,
  median_s = excluded.median_s, evaluation_id = excluded.evaluation_id,
  started = excluded.started, finished = excluded.finished
RETURNING id)SQL",
                                     kAttemptColumns));
  const std::string now = store::utc_now();
  s.bind(1, a.run_id).bind(2, static_cast<std::int64_t>(a.attempt)).bind(3, a.candidate_hash);
  s.bind(4, a.source_hash).bind(5, a.lang).bind(6, a.source).bind(7, a.note).bind(8, a.diff);
  s.bind(9, a.disposition).bind(10, a.candidate.dump()).bind(11, a.feedback.dump()).bind(12, a.score);
  s.bind(13, a.speedup).bind(14, a.sol_fraction).bind(15, a.median_s);
  if (a.evaluation_id) s.bind(16, *a.evaluation_id);
  else s.bind(16, std::nullopt);
  s.bind(17, a.started.empty() ? now : a.started).bind(18, a.finished.empty() ? now : a.finished);
  if (!s.step()) throw StoreError("attempt was not stored (no id returned)");
  const std::int64_t id = s.integer(0);
  while (s.step()) {
  }
  t.commit();
  return id;
}

std::vector<AgentAttempt> Store::agent_attempts(std::int64_t run_id) const {
  sql::Stmt s(impl_->db, fmt::format("SELECT {} FROM agent_attempts WHERE run_id = ?1 ORDER BY attempt, id",
                                     kAttemptColumns));
  s.bind(1, run_id);
  std::vector<AgentAttempt> out;
  while (s.step()) out.push_back(read_attempt(s));
  return out;
}

}  // namespace kforge
