// The agent journal in the store: attempts round-trip, one row per (run, candidate), the run
// found again by its key, and a version-1 database migrated to version 2 with its rows intact.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "store_fixtures.hpp"

namespace kforge {
namespace {

AgentAttempt attempt(std::int64_t run, int n, const std::string& hash, const std::string& disposition) {
  AgentAttempt a;
  a.run_id = run;
  a.attempt = n;
  a.candidate_hash = hash;
  a.source_hash = "s" + hash;
  a.lang = "cpp";
  a.source = "// source " + hash;
  a.note = "note " + std::to_string(n);
  a.disposition = disposition;
  a.candidate = {{"grid", {"ceil_div(M,16)"}}};
  a.feedback = {{"gate", disposition == "passed" ? "passed" : "compile"}};
  a.score = disposition == "passed" ? 150 : 0;
  if (disposition == "passed") a.median_s = 1e-3;
  return a;
}

TEST(StoreJournal, AttemptsRoundTripAndTheRunIsFoundByItsKey) {
  const auto db = test::fresh_db("journal");
  Store s(db);
  nlohmann::ordered_json meta;
  meta["agent"] = {{"run_key", "k1"}};
  const auto run = s.begin_run("kforge agent ...", test::kFingerprint, meta);
  EXPECT_FALSE(s.find_agent_run("k2"));
  ASSERT_TRUE(s.find_agent_run("k1"));
  EXPECT_EQ(s.find_agent_run("k1")->id, run);
  s.record_attempt(attempt(run, 2, "b", "passed"));
  s.record_attempt(attempt(run, 1, "a", "compile_error"));
  s.record_attempt(attempt(run, 1, "a", "compile_error"));  // the same candidate: replaced
  const auto as = s.agent_attempts(run);
  ASSERT_EQ(as.size(), 2u);
  EXPECT_EQ(as[0].candidate_hash, "a");
  EXPECT_EQ(as[1].source, "// source b");
  EXPECT_EQ(as[1].median_s, 1e-3);
  EXPECT_EQ(as[1].candidate.at("grid")[0], "ceil_div(M,16)");
  EXPECT_FALSE(as[0].median_s);
  meta["agent"]["final"] = {{"candidate_hash", "b"}};
  s.set_run_meta(run, meta);
  EXPECT_EQ(s.run(run)->meta["agent"]["final"]["candidate_hash"], "b");
}

TEST(StoreJournal, AVersionOneDatabaseMigratesWithItsEvaluations) {
  const auto db = test::fresh_db("journal-migrate");
  const auto req = test::gemm_request();
  {
    Store s(db);
    s.record(s.begin_run("kforge tune", test::kFingerprint), StoredEvaluation::from(req, test::fake_result(req, 1e-3),
                                                                                     test::kFingerprint));
  }
  {  // back to version 1: as an older kforge left it
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h,
                           "DROP TABLE agent_attempts; ALTER TABLE evaluations DROP COLUMN verification; "
                           "PRAGMA user_version = 1",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(h);
  }
  Store s(db);
  EXPECT_EQ(s.schema_version(), Store::kSchemaVersion);
  EXPECT_EQ(s.evaluations().size(), 1u);
  EXPECT_TRUE(s.agent_attempts(1).empty());
  s.record_attempt(attempt(1, 1, "a", "passed"));
  EXPECT_EQ(s.agent_attempts(1).size(), 1u);
  EXPECT_EQ(s.integrity_check(), "ok");
}

}  // namespace
}  // namespace kforge
