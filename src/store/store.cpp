// The Store: opening (schema check and migration), runs, one transaction per evaluation, and
// the queries behind resume, `kforge db` and the best-known lookup.
#include "kforge/store.hpp"

#include <fmt/format.h>

#include "store/internal.hpp"
#include "store/schema.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "unknown"
#endif

namespace kforge {

namespace store {

const char* const kEvaluationColumns =
    "id, run_id, problem, sizes, dtype, kernel, source_hash, params, backend, device, fingerprint, "
    "disposition, error, compile_s, verify, median_s, min_s, mean_s, stdev_s, samples, "
    "baseline_name, baseline_median_s, gflops, sol_fraction, started, finished, result, extra, verification";

StoredEvaluation read_evaluation(const sql::Stmt& s) {
  StoredEvaluation e;
  e.id = s.integer(0);
  e.run_id = s.integer(1);
  e.key = {s.text(2), s.text(3), s.text(4), s.text(6), s.text(7), s.text(8), s.text(10)};
  e.kernel = s.text(5);
  e.device = s.text(9);
  e.disposition = s.text(11);
  e.error = s.text(12);
  e.compile_s = s.real(13);
  if (!s.is_null(14)) e.verify = nlohmann::json::parse(s.text(14));
  e.median_s = s.opt_real(15);
  e.min_s = s.opt_real(16);
  e.mean_s = s.opt_real(17);
  e.stdev_s = s.opt_real(18);
  e.samples = nlohmann::json::parse(s.text(19)).get<std::vector<double>>();
  e.baseline_name = s.text(20);
  e.baseline_median_s = s.opt_real(21);
  e.gflops = s.opt_real(22);
  e.sol_fraction = s.opt_real(23);
  e.started = s.text(24);
  e.finished = s.text(25);
  e.result = nlohmann::json::parse(s.text(26));
  e.extra = nlohmann::ordered_json::parse(s.text(27));
  if (!s.is_null(28)) e.verification = nlohmann::json::parse(s.text(28));
  return e;
}

}  // namespace store

namespace {

constexpr const char* kUpsert = R"SQL(
INSERT INTO evaluations (run_id, problem, sizes, dtype, kernel, source_hash, params, backend,
  device, fingerprint, disposition, error, compile_s, verify, median_s, min_s, mean_s, stdev_s,
  repetitions, samples, baseline_name, baseline_median_s, gflops, sol_fraction, started, finished,
  result, extra, verification)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
  ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)
ON CONFLICT (problem, sizes, dtype, source_hash, params, backend, fingerprint) DO UPDATE SET
  run_id = excluded.run_id, kernel = excluded.kernel, device = excluded.device,
  disposition = excluded.disposition, error = excluded.error, compile_s = excluded.compile_s,
  verify = excluded.verify, median_s = excluded.median_s, min_s = excluded.min_s,
  mean_s = excluded.mean_s, stdev_s = excluded.stdev_s, repetitions = excluded.repetitions,
  samples = excluded.samples, baseline_name = excluded.baseline_name,
  baseline_median_s = excluded.baseline_median_s, gflops = excluded.gflops,
  sol_fraction = excluded.sol_fraction, started = excluded.started, finished = excluded.finished,
  result = excluded.result, extra = excluded.extra, verification = excluded.verification
RETURNING id
)SQL";

std::int64_t upsert(sql::Stmt& s, std::int64_t run_id, const StoredEvaluation& e) {
  const std::string finished = e.finished.empty() ? store::utc_now() : e.finished;
  s.reset();
  s.bind(1, run_id)
      .bind(2, e.key.problem)
      .bind(3, e.key.sizes)
      .bind(4, e.key.dtype)
      .bind(5, e.kernel)
      .bind(6, e.key.source_hash)
      .bind(7, e.key.params)
      .bind(8, e.key.backend)
      .bind(9, e.device)
      .bind(10, e.key.fingerprint)
      .bind(11, e.disposition)
      .bind(12, e.error)
      .bind(13, e.compile_s);
  if (e.verify.is_null()) s.bind(14, std::nullopt);
  else s.bind(14, e.verify.dump());
  s.bind(15, e.median_s)
      .bind(16, e.min_s)
      .bind(17, e.mean_s)
      .bind(18, e.stdev_s)
      .bind(19, static_cast<std::int64_t>(e.samples.size()))
      .bind(20, nlohmann::json(e.samples).dump())
      .bind(21, e.baseline_name)
      .bind(22, e.baseline_median_s)
      .bind(23, e.gflops)
      .bind(24, e.sol_fraction)
      .bind(25, e.started.empty() ? finished : e.started)
      .bind(26, finished)
      .bind(27, e.result.is_null() ? "{}" : e.result.dump())
      .bind(28, e.extra.dump());
  if (e.verification.is_null()) s.bind(29, std::nullopt);
  else s.bind(29, e.verification.dump());
  if (!s.step()) throw StoreError("evaluation was not stored (no id returned)");
  const std::int64_t id = s.integer(0);
  while (s.step()) {
  }
  return id;
}

std::vector<StoredEvaluation> read_all(sql::Stmt& s) {
  std::vector<StoredEvaluation> out;
  while (s.step()) out.push_back(store::read_evaluation(s));
  return out;
}

}  // namespace

Store::Store(const std::filesystem::path& path, Mode mode) : path_(path) {
  const bool read_only = mode == Mode::read_only;
  if (read_only && !std::filesystem::exists(path))
    throw StoreError("no results database at '" + path.string() +
                     "': run `kforge tune --db` first, or pass another --db");
  if (!read_only && path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  impl_ = std::make_unique<Impl>(path.string(), read_only);
  store::prepare(impl_->db, read_only);
}

Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

int Store::schema_version() const { return static_cast<int>(impl_->db.scalar_int("PRAGMA user_version")); }

std::string Store::integrity_check() const {
  sql::Stmt s(impl_->db, "PRAGMA integrity_check");
  std::string out;
  while (s.step()) {
    if (!out.empty()) out += '\n';
    out += s.text(0);
  }
  return out;
}

std::int64_t Store::begin_run(std::string_view command, std::string_view fingerprint,
                              const nlohmann::ordered_json& meta) {
  sql::Transaction t(impl_->db);
  sql::Stmt s(impl_->db,
              "INSERT INTO runs (started, command, fingerprint, kforge_version, meta) VALUES (?1, ?2, ?3, ?4, ?5)");
  s.bind(1, store::utc_now()).bind(2, command).bind(3, fingerprint).bind(4, KFORGE_VERSION).bind(5, meta.dump());
  s.step();
  const std::int64_t id = impl_->db.last_insert_id();
  t.commit();
  return id;
}

std::int64_t Store::record(std::int64_t run_id, const StoredEvaluation& e) {
  sql::Transaction t(impl_->db);
  sql::Stmt s(impl_->db, kUpsert);
  const std::int64_t id = upsert(s, run_id, e);
  t.commit();
  return id;
}

void Store::record_all(std::int64_t run_id, const std::vector<StoredEvaluation>& es) {
  sql::Transaction t(impl_->db);
  sql::Stmt s(impl_->db, kUpsert);
  for (const auto& e : es) upsert(s, run_id, e);
  t.commit();
}

std::optional<StoredEvaluation> Store::find(const EvalKey& k) const {
  sql::Stmt s(impl_->db, fmt::format("SELECT {} FROM evaluations WHERE problem = ?1 AND sizes = ?2 AND "
                                     "dtype = ?3 AND source_hash = ?4 AND params = ?5 AND backend = ?6 "
                                     "AND fingerprint = ?7",
                                     store::kEvaluationColumns));
  s.bind(1, k.problem).bind(2, k.sizes).bind(3, k.dtype).bind(4, k.source_hash).bind(5, k.params);
  s.bind(6, k.backend).bind(7, k.fingerprint);
  if (!s.step()) return std::nullopt;
  return store::read_evaluation(s);
}

std::optional<StoredEvaluation> Store::find_reusable(const EvalRequest& req, std::string_view fingerprint) const {
  auto hit = find(EvalKey::of(req, fingerprint));
  if (!hit) return std::nullopt;
  const std::string& d = hit->disposition;
  const bool before_verification = d == "invalid_config" || d == "compile_error" || d == "not_supported";
  if (before_verification || verification_shortfall(hit->verification, verification_level(req)).empty())
    return hit;
  return std::nullopt;
}

std::optional<StoredEvaluation> Store::evaluation(std::int64_t id) const {
  sql::Stmt s(impl_->db, fmt::format("SELECT {} FROM evaluations WHERE id = ?1", store::kEvaluationColumns));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return store::read_evaluation(s);
}

std::vector<StoredEvaluation> Store::evaluations(const StoreQuery& q) const {
  std::string where = "1";
  std::vector<std::string> texts;
  auto add = [&](const char* column, const std::string& value) {
    if (value.empty()) return;
    texts.push_back(value);
    where += fmt::format(" AND {} = ?{}", column, texts.size());
  };
  add("problem", q.problem);
  add("backend", q.backend);
  add("fingerprint", q.fingerprint);
  add("kernel", q.kernel);
  add("disposition", q.disposition);
  if (q.run_id) where += fmt::format(" AND run_id = {}", *q.run_id);
  sql::Stmt s(impl_->db,
              fmt::format("SELECT {} FROM evaluations WHERE {} ORDER BY id", store::kEvaluationColumns, where));
  for (std::size_t i = 0; i < texts.size(); ++i) s.bind(static_cast<int>(i + 1), texts[i]);
  return read_all(s);
}

std::vector<StoredEvaluation> Store::fastest(const std::string& problem, const std::string& sizes,
                                             const std::string& dtype, const std::string& backend,
                                             const std::string& fingerprint, int limit) const {
  sql::Stmt s(impl_->db, fmt::format("SELECT {} FROM evaluations WHERE problem = ?1 AND sizes = ?2 AND "
                                     "dtype = ?3 AND backend = ?4 AND fingerprint = ?5 AND "
                                     "disposition = 'passed' AND median_s IS NOT NULL "
                                     "ORDER BY median_s, id LIMIT ?6",
                                     store::kEvaluationColumns));
  s.bind(1, problem).bind(2, sizes).bind(3, dtype).bind(4, backend).bind(5, fingerprint);
  s.bind(6, static_cast<std::int64_t>(limit));
  return read_all(s);
}

namespace {

std::vector<RunInfo> read_runs(const sql::Db& db, const std::string& where) {
  sql::Stmt s(db,
              "SELECT r.id, r.started, r.command, r.fingerprint, r.kforge_version, r.meta, count(e.id), "
              "coalesce(sum(e.disposition = 'passed'), 0), "
              "min(CASE WHEN e.disposition = 'passed' THEN e.median_s END) "
              "FROM runs r LEFT JOIN evaluations e ON e.run_id = r.id " +
                  where + " GROUP BY r.id ORDER BY r.id");
  std::vector<RunInfo> out;
  while (s.step()) {
    RunInfo r;
    r.id = s.integer(0);
    r.started = s.text(1);
    r.command = s.text(2);
    r.fingerprint = s.text(3);
    r.kforge_version = s.text(4);
    r.meta = nlohmann::ordered_json::parse(s.text(5));
    r.evaluations = s.integer(6);
    r.passed = s.integer(7);
    r.best_median_s = s.opt_real(8);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<RunInfo> Store::runs() const { return read_runs(impl_->db, ""); }

std::optional<RunInfo> Store::run(std::int64_t id) const {
  auto rs = read_runs(impl_->db, "WHERE r.id = " + std::to_string(id));
  if (rs.empty()) return std::nullopt;
  return rs.front();
}

std::optional<Store> open_store_if_exists(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  return Store(path, Store::Mode::read_only);
}

}  // namespace kforge
