#pragma once
// `kforge tune` and the results store: every evaluation recorded as it ends, and a run that
// was killed resumes with the stored results instead of evaluating them again.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/store.hpp"
#include "kforge/tune.hpp"

namespace kforge::cli {

class TuneRecorder {
 public:
  // Opens (creating) the database and starts a run for this backend's machine. `fresh`: record
  // but never resume, so every evaluation is measured again.
  TuneRecorder(const std::filesystem::path& db, const Backend& backend, bool fresh);
  TuneRecorder(const TuneRecorder&) = delete;

  // Points o.lookup and o.record at this recorder; it must outlive the tune() call.
  void attach(TuneOptions& o);
  // Records one more evaluation (e.g. the winner re-timed beside the baseline).
  void record(const EvalRequest& req, const EvalResult& r);

  [[nodiscard]] int resumed() const { return resumed_; }
  [[nodiscard]] int recorded() const { return recorded_; }
  [[nodiscard]] nlohmann::json to_json() const;  // {path, run, resumed, recorded}
  [[nodiscard]] std::string summary() const;     // one line for the human table

 private:
  Store store_;
  std::string fingerprint_;
  std::int64_t run_ = 0;
  bool fresh_ = false;
  int resumed_ = 0, recorded_ = 0;
  // When each evaluation in flight began, by configuration: several are in flight at once
  // when ranks evaluate in parallel (kforge/dist.hpp).
  std::map<ParamValues, std::string> started_;
};

// `--db FILE`, `--no-db`, `--fresh`.
struct TuneStoreOptions {
  std::string db;
  bool no_db = false, fresh = false;
  void add_to(CLI::App& cmd);
  // The recorder for one backend's tuning run; null with --no-db.
  [[nodiscard]] std::unique_ptr<TuneRecorder> recorder(const Backend& backend) const;
};

}  // namespace kforge::cli
