#pragma once
// The results store: every evaluation kforge runs, kept in one SQLite database (WAL mode, one
// transaction per evaluation), keyed so that a killed tuning run resumes without repeating an
// evaluation, and read back for the best-known parameters of a problem instance on a machine
// (the way CLBlast reads its tuning database). Imports and exports Kernel Tuner cache files.
// Schema, crash safety and formats: docs/store.md.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/evaluate.hpp"

namespace kforge {

// A database that cannot be opened, is damaged, or was written by a newer kforge.
struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// $KFORGE_CACHE_DIR/results.db, else ~/.cache/kforge/results.db (see cache_dir()).
[[nodiscard]] std::filesystem::path default_store_path();

// The machine a measurement belongs to: the backend and its device in words (for cpu, the
// model and the thread count), as the ceilings cache names it.
[[nodiscard]] std::string machine_fingerprint(std::string_view backend, std::string_view device);
// Hash of what the compiler sees besides the defines: language, entry point and source text.
[[nodiscard]] std::string kernel_source_hash(const KernelSpec& k);
// Now, as ISO 8601 UTC with milliseconds: "2025-01-31T12:34:56.789Z".
[[nodiscard]] std::string utc_timestamp();
// Sizes or parameters as canonical JSON text (keys sorted, no spaces): the form keys compare in.
[[nodiscard]] std::string canonical_json(const nlohmann::json& j);

// What makes two evaluations the same one. Resume skips a request whose key is stored.
struct EvalKey {
  std::string problem;
  std::string sizes;  // canonical JSON object
  std::string dtype;
  std::string source_hash;
  std::string params;  // canonical JSON object: the full configuration (defaults resolved)
  std::string backend;
  std::string fingerprint;
  // The key of a request run on a machine; the params are resolved against the kernel's defaults.
  static EvalKey of(const EvalRequest& req, std::string_view fingerprint);
};

// The verification a verdict had, kept beside it (not in the key: one row per evaluation, the
// newest wins) so that reuse can honour it (docs/verification.md, "Reusing a stored verdict"):
// thorough or quick, trials, distributions, fuzzed shapes, determinism repeats, bitwise repeats,
// the index_width check, the ThreadSanitizer run and the scalars the user fixed. The seed is left out: any seed is as
// strong as another. What was asked, not what ran: a check skipped on this machine (index_width
// "skipped: needs N GiB") is skipped again by the same request here, and the verdict says so.
[[nodiscard]] nlohmann::json verification_level(const EvalRequest& req);
// Why a verdict verified at `stored` may not answer a request that wants `wanted`; empty when it
// may (an equal or stronger verification). A null `stored` (a row from before schema 3, an
// imported one) is unknown: it answers no request.
[[nodiscard]] std::string verification_shortfall(const nlohmann::json& stored, const nlohmann::json& wanted);

// One evaluation as the database holds it.
struct StoredEvaluation {
  std::int64_t id = 0, run_id = 0;
  EvalKey key;
  std::string kernel, device;
  std::string disposition = "passed";  // disposition_name(); Kernel Tuner failures map onto these
  std::string error;
  double compile_s = 0;
  nlohmann::json verify;  // the verification verdict; null when none ran
  nlohmann::json verification;  // verification_level() of its request; null: unknown
  std::optional<double> median_s, min_s, mean_s, stdev_s;
  std::vector<double> samples;  // every timing sample, seconds, in the order measured
  std::string baseline_name;
  std::optional<double> baseline_median_s, gflops, sol_fraction;
  std::string started, finished;  // ISO 8601 UTC with milliseconds
  nlohmann::json result;  // the full EvalResult JSON less its samples: what resume hands back
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // what a foreign format
                                                                   // carried beyond the columns

  static StoredEvaluation from(const EvalRequest& req, const EvalResult& r,
                               std::string_view fingerprint);
  // The result as evaluate() returned it. Throws StoreError when the stored parameters are not
  // integers (an imported space kforge cannot run).
  [[nodiscard]] EvalResult to_result() const;
  [[nodiscard]] nlohmann::json params() const { return nlohmann::json::parse(key.params); }
  [[nodiscard]] nlohmann::json sizes() const { return nlohmann::json::parse(key.sizes); }
  [[nodiscard]] nlohmann::json to_json() const;  // every column
};

struct RunInfo {
  std::int64_t id = 0;
  std::string started, command, fingerprint, kforge_version;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();  // e.g. an imported header
  std::int64_t evaluations = 0, passed = 0;
  std::optional<double> best_median_s;
  [[nodiscard]] nlohmann::json to_json() const;
};

// One attempt of a `kforge agent` run (docs/agent.md), journaled the moment it ends so that a
// killed run resumes without repeating it. Its evaluation, if one ran, is also an evaluation row.
struct AgentAttempt {
  std::int64_t id = 0, run_id = 0;
  int attempt = 0;              // 1-based, in the order the proposer sent the candidates
  std::string candidate_hash;   // source, language, entry, geometry, parameters: what resume matches
  std::string source_hash;      // kernel_source_hash(): what the compiler saw
  std::string lang, source, note;
  std::string diff;             // against the best candidate so far, when there was one
  std::string disposition;      // disposition_name(), or "rejected" by the static checks
  nlohmann::json candidate;     // the proposer's message, less its source
  nlohmann::json feedback;      // the feedback kforge sent for it
  double score = 0;             // arena score: compiled 20 + correct 100 + 100 x speedup
  std::optional<double> speedup, sol_fraction, median_s;
  std::optional<std::int64_t> evaluation_id;
  std::string started, finished;
  [[nodiscard]] nlohmann::json to_json() const;
};

// Which evaluations to read; empty fields match everything.
struct StoreQuery {
  std::optional<std::int64_t> run_id;
  std::string problem, backend, fingerprint, kernel, disposition;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 3;
  enum class Mode { read_write, read_only };

  // Opens (read_write: creating it and its folder) and checks the schema version, migrating an
  // older one. Throws StoreError for a file that is not a kforge database or is newer than this
  // kforge.
  explicit Store(const std::filesystem::path& path, Mode mode = Mode::read_write);
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  // A new run; returns its id.
  std::int64_t begin_run(std::string_view command, std::string_view fingerprint,
                         const nlohmann::ordered_json& meta = nlohmann::ordered_json::object());
  // One evaluation in one transaction, durable when this returns. An evaluation with an equal
  // key is replaced (the newer measurement wins) and keeps its id. Returns the id.
  std::int64_t record(std::int64_t run_id, const StoredEvaluation& e);
  // Many evaluations in one transaction (imports): all or none.
  void record_all(std::int64_t run_id, const std::vector<StoredEvaluation>& es);

  // The evaluation stored under `k`, whatever verification it had.
  [[nodiscard]] std::optional<StoredEvaluation> find(const EvalKey& k) const;
  // What resume uses: the evaluation of `req` on the machine if its verdict may answer `req`:
  // verified as strongly as `req` asks (verification_shortfall), or stopped before verification
  // (invalid_config, compile_error, not_supported), which no verification changes.
  [[nodiscard]] std::optional<StoredEvaluation> find_reusable(const EvalRequest& req,
                                                              std::string_view fingerprint) const;
  [[nodiscard]] std::optional<StoredEvaluation> evaluation(std::int64_t id) const;
  [[nodiscard]] std::vector<StoredEvaluation> evaluations(const StoreQuery& q = {}) const;
  [[nodiscard]] std::vector<RunInfo> runs() const;
  [[nodiscard]] std::optional<RunInfo> run(std::int64_t id) const;
  // The passed evaluations of a problem instance on a machine, fastest first.
  [[nodiscard]] std::vector<StoredEvaluation> fastest(const std::string& problem, const std::string& sizes,
                                                      const std::string& dtype, const std::string& backend,
                                                      const std::string& fingerprint,
                                                      int limit) const;
  // The agent journal (journal.cpp). The run whose meta.agent.run_key is `run_key`, if any.
  [[nodiscard]] std::optional<RunInfo> find_agent_run(std::string_view run_key) const;
  // Replaces a run's meta (an agent run keeps its baseline and its final verdict there).
  void set_run_meta(std::int64_t run_id, const nlohmann::ordered_json& meta);
  // One attempt in one transaction, durable when this returns; an equal (run, candidate_hash)
  // is replaced. Returns its id.
  std::int64_t record_attempt(const AgentAttempt& a);
  // A run's attempts in attempt order.
  [[nodiscard]] std::vector<AgentAttempt> agent_attempts(std::int64_t run_id) const;

  // "ok", or SQLite's list of what is damaged.
  [[nodiscard]] std::string integrity_check() const;
  [[nodiscard]] int schema_version() const;

  struct Impl;

 private:
  std::filesystem::path path_;
  std::unique_ptr<Impl> impl_;
};

// The fastest stored configuration of `req`'s kernel for its problem, sizes, dtype and backend on
// the machine `fingerprint`, that the kernel's current space still accepts (same parameter names,
// constraints hold); evaluations of the same kernel source are preferred. Empty if none.
[[nodiscard]] std::optional<StoredEvaluation> best_known(const Store& s, const EvalRequest& req,
                                                         std::string_view fingerprint);
// Opens `path` read-only if the file exists (a reader never creates a database).
[[nodiscard]] std::optional<Store> open_store_if_exists(const std::filesystem::path& path);

// Kernel Tuner cache files (JSON: tune_params_keys, tune_params and a `cache` of configurations
// with `time` in milliseconds or an error string). A file cut short by a killed Kernel Tuner
// (no closing braces) reads too.
struct KernelTunerImport {
  std::int64_t run_id = 0;
  std::size_t entries = 0, failed = 0;
  std::string kernel, device;
};
KernelTunerImport import_kerneltuner(Store& s, const std::filesystem::path& file,
                                     std::string_view command);
// One cache file of evaluations that share problem, sizes, dtype, kernel source, backend and
// machine; throws StoreError listing the groups when they do not (narrow the query). Imported
// entries come back verbatim, so import(export(x)) exports to the same text.
[[nodiscard]] std::string export_kerneltuner(const Store& s, const std::vector<StoredEvaluation>& es);
[[nodiscard]] std::string export_json(const std::vector<StoredEvaluation>& es);
[[nodiscard]] std::string export_csv(const std::vector<StoredEvaluation>& es);

}  // namespace kforge
