// The schema (versions 1 to 3) and the migration check. Each entry of kMigrations takes the schema from
// version i to i + 1; a new version appends one entry and never edits an old one.
#include "store/schema.hpp"

#include <string>
#include <vector>

namespace kforge::store {
namespace {

const std::vector<const char*> kMigrations = {
    // 0 -> 1
    R"SQL(
CREATE TABLE runs (
  id             INTEGER PRIMARY KEY,
  started        TEXT NOT NULL,              -- ISO 8601 UTC
  command        TEXT NOT NULL,              -- the command line, or what imported the run
  fingerprint    TEXT NOT NULL,              -- machine_fingerprint() of the run's backend
  kforge_version TEXT NOT NULL,
  meta           TEXT NOT NULL DEFAULT '{}'  -- JSON: e.g. the header of an imported cache file
);
CREATE TABLE evaluations (
  id                INTEGER PRIMARY KEY,
  run_id            INTEGER NOT NULL REFERENCES runs(id),
  problem           TEXT NOT NULL,
  sizes             TEXT NOT NULL,           -- canonical JSON object
  dtype             TEXT NOT NULL,
  kernel            TEXT NOT NULL,
  source_hash       TEXT NOT NULL,
  params            TEXT NOT NULL,           -- canonical JSON object, defaults resolved
  backend           TEXT NOT NULL,
  device            TEXT NOT NULL,
  fingerprint       TEXT NOT NULL,
  disposition       TEXT NOT NULL,
  error             TEXT NOT NULL DEFAULT '',
  compile_s         REAL NOT NULL DEFAULT 0,
  verify            TEXT,                    -- JSON verdict, NULL when none ran
  median_s          REAL,
  min_s             REAL,
  mean_s            REAL,
  stdev_s           REAL,
  repetitions       INTEGER NOT NULL DEFAULT 0,
  samples           TEXT NOT NULL DEFAULT '[]',  -- JSON array: every timing sample, seconds
  baseline_name     TEXT NOT NULL DEFAULT '',
  baseline_median_s REAL,
  gflops            REAL,
  sol_fraction      REAL,
  started           TEXT NOT NULL,
  finished          TEXT NOT NULL,
  result            TEXT NOT NULL DEFAULT '{}',  -- EvalResult JSON less samples: what resume returns
  extra             TEXT NOT NULL DEFAULT '{}',  -- JSON a foreign format carried (Kernel Tuner entry)
  UNIQUE (problem, sizes, dtype, source_hash, params, backend, fingerprint)
);
CREATE INDEX evaluations_by_instance
  ON evaluations (problem, sizes, dtype, backend, fingerprint, disposition, median_s);
CREATE INDEX evaluations_by_run ON evaluations (run_id);
)SQL",
    // 1 -> 2: the journal of `kforge agent` runs (docs/agent.md)
    R"SQL(
CREATE TABLE agent_attempts (
  id             INTEGER PRIMARY KEY,
  run_id         INTEGER NOT NULL REFERENCES runs(id),
  attempt        INTEGER NOT NULL,            -- 1-based, in the order the proposer sent them
  candidate_hash TEXT NOT NULL,               -- what resume matches a candidate by
  source_hash    TEXT NOT NULL,
  lang           TEXT NOT NULL,
  source         TEXT NOT NULL,
  note           TEXT NOT NULL DEFAULT '',
  diff           TEXT NOT NULL DEFAULT '',    -- against the best candidate so far
  disposition    TEXT NOT NULL,
  candidate      TEXT NOT NULL DEFAULT '{}',  -- JSON: the proposer's message less its source
  feedback       TEXT NOT NULL DEFAULT '{}',  -- JSON: what kforge answered
  score          REAL NOT NULL DEFAULT 0,
  speedup        REAL,
  sol_fraction   REAL,
  median_s       REAL,
  evaluation_id  INTEGER REFERENCES evaluations(id),
  started        TEXT NOT NULL,
  finished       TEXT NOT NULL,
  UNIQUE (run_id, candidate_hash)
);
CREATE INDEX agent_attempts_by_run ON agent_attempts (run_id, attempt);
)SQL",
    // 2 -> 3: the verification each verdict had (verification_level(), JSON), so that resume
    // reuses a verdict only for an equal or weaker verification. Rows from before stay NULL:
    // unknown, reused by no request (they are evaluated again and replaced).
    R"SQL(
ALTER TABLE evaluations ADD COLUMN verification TEXT;
)SQL",
};

}  // namespace

void prepare(const sql::Db& db, bool read_only) {
  db.exec("PRAGMA foreign_keys = ON");
  const int app = static_cast<int>(db.scalar_int("PRAGMA application_id"));
  const int version = static_cast<int>(db.scalar_int("PRAGMA user_version"));
  const auto tables = db.scalar_int("SELECT count(*) FROM sqlite_master WHERE type = 'table'");
  if (app != kApplicationId && (app != 0 || tables > 0))
    throw StoreError("'" + db.path() +
                     "' is an SQLite database but not a kforge results database: pass another --db");
  const int latest = static_cast<int>(kMigrations.size());
  if (version > latest)
    throw StoreError("results database '" + db.path() + "' has schema version " +
                     std::to_string(version) + ", newer than this kforge's " + std::to_string(latest) +
                     ": upgrade kforge, or pass another --db");
  if (read_only) {
    if (version < latest)
      throw StoreError("results database '" + db.path() + "' has schema version " +
                       std::to_string(version) + " and needs migrating to " + std::to_string(latest) +
                       ": run any writing command (e.g. `kforge tune --db`) on it first");
    return;
  }
  // WAL: readers never block the writer and a commit appends to the log, so a process killed
  // at any point leaves the last committed transaction intact. synchronous = FULL: the log is
  // fsynced at every commit, so a committed evaluation survives even a power cut; one fsync
  // (~ms) is noise next to an evaluation that compiles, verifies and times a kernel (>= 0.3 s).
  {
    sql::Stmt s(db, "PRAGMA journal_mode = WAL");
    if (!s.step() || s.text(0) != "wal")
      throw StoreError("results database '" + db.path() +
                       "' cannot use write-ahead logging (a network file system?): pass a local --db");
  }
  db.exec("PRAGMA synchronous = FULL");
  if (version == latest) return;
  sql::Transaction t(db);
  // Another process may have migrated while this one waited for the write lock.
  const int now = static_cast<int>(db.scalar_int("PRAGMA user_version"));
  for (int v = now; v < latest; ++v) db.exec(kMigrations[static_cast<std::size_t>(v)]);
  db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  db.exec("PRAGMA user_version = " + std::to_string(latest));
  t.commit();
}

}  // namespace kforge::store
