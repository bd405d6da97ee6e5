#include "cli/tune_store.hpp"

#include <fmt/format.h>

#include "cli/store_options.hpp"

namespace kforge::cli {

TuneRecorder::TuneRecorder(const std::filesystem::path& db, const Backend& backend, bool fresh)
    : store_(db), fingerprint_(machine_fingerprint(backend.name(), backend.device())), fresh_(fresh) {
  run_ = store_.begin_run(command_line(), fingerprint_);
}

void TuneRecorder::attach(TuneOptions& o) {
  o.lookup = [this](const EvalRequest& req) -> std::optional<EvalResult> {
    started_[req.params] = utc_timestamp();
    if (fresh_) return std::nullopt;
    const auto hit = store_.find_reusable(req, fingerprint_);
    if (!hit) return std::nullopt;
    ++resumed_;
    return hit->to_result();
  };
  o.record = [this](const EvalRequest& req, const EvalResult& r) { record(req, r); };
}

void TuneRecorder::record(const EvalRequest& req, const EvalResult& r) {
  StoredEvaluation e = StoredEvaluation::from(req, r, fingerprint_);
  if (const auto it = started_.find(req.params); it != started_.end()) {
    e.started = it->second;
    started_.erase(it);
  }
  store_.record(run_, e);
  ++recorded_;
}

nlohmann::json TuneRecorder::to_json() const {
  return {{"path", store_.path().string()}, {"run", run_}, {"resumed", resumed_}, {"recorded", recorded_}};
}

std::string TuneRecorder::summary() const {
  return fmt::format("results in {} (run {}): {} evaluation(s) recorded, {} resumed from earlier runs",
                     store_.path().string(), run_, recorded_, resumed_);
}

void TuneStoreOptions::add_to(CLI::App& cmd) {
  add_db_option(cmd, db);
  cmd.add_flag("--no-db", no_db, "neither record evaluations nor resume from stored ones");
  cmd.add_flag("--fresh", fresh, "measure every configuration again instead of resuming (still recorded)");
}

std::unique_ptr<TuneRecorder> TuneStoreOptions::recorder(const Backend& backend) const {
  if (no_db) return nullptr;
  try {
    return std::make_unique<TuneRecorder>(store_path(db), backend, fresh);
  } catch (const std::exception& e) {
    if (!db.empty()) throw;  // the database asked for must work
    fmt::print(stderr, "kforge: warning: tuning without the results store (pass --db FILE to choose one): {}\n",
               e.what());
    return nullptr;
  }
}

}  // namespace kforge::cli
