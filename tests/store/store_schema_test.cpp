// The store's schema: an evaluation comes back as it went in, the file is a versioned kforge
// database in WAL mode, and files that are not (or are newer) are refused with a reason.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "store_fixtures.hpp"

namespace kforge {
namespace {

using test::fake_result;
using test::fresh_db;
using test::gemm_request;
using test::kFingerprint;

std::string pragma(const std::filesystem::path& db, const char* sql) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(h, sql, -1, &s, nullptr);
  std::string out = sqlite3_step(s) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) : "";
  sqlite3_finalize(s);
  sqlite3_close(h);
  return out;
}

void raw_exec(const std::filesystem::path& db, const char* sql) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  sqlite3_close(h);
}

TEST(StoreSchema, AnEvaluationRoundTripsThroughTheDatabase) {
  const auto path = fresh_db("roundtrip");
  const EvalRequest req = gemm_request({{"MR", 8}, {"NV", 1}});
  EvalResult r = fake_result(req, 2.5e-4);
  r.baseline = summarize({3e-4, 3.1e-4});
  r.baseline_name = "OpenBLAS";
  std::int64_t id = 0;
  {
    Store s(path);
    const auto run = s.begin_run("kforge tune gemm", kFingerprint);
    id = s.record(run, StoredEvaluation::from(req, r, kFingerprint));
  }
  Store s(path, Store::Mode::read_only);
  const auto e = s.find(EvalKey::of(req, kFingerprint));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->id, id);
  EXPECT_EQ(e->key.problem, "gemm");
  EXPECT_EQ(e->sizes(), (nlohmann::json{{"M", 64}, {"N", 48}, {"K", 32}}));
  EXPECT_EQ(e->key.dtype, "fp32");
  EXPECT_EQ(e->kernel, "gemm.cpu");
  EXPECT_EQ(e->key.source_hash, kernel_source_hash(req.kernel));
  EXPECT_EQ(e->params().at("MR"), 8);
  EXPECT_EQ(e->params().at("KC"), req.kernel.defaults.at("KC")) << "defaults are resolved in the key";
  EXPECT_EQ(e->key.backend, "cpu");
  EXPECT_EQ(e->device, r.device);
  EXPECT_EQ(e->disposition, "passed");
  EXPECT_DOUBLE_EQ(e->compile_s, 0.25);
  EXPECT_EQ(e->samples, r.timing->samples);
  EXPECT_DOUBLE_EQ(*e->median_s, r.timing->median_s);
  EXPECT_DOUBLE_EQ(*e->min_s, r.timing->min_s);
  EXPECT_DOUBLE_EQ(*e->stdev_s, r.timing->stdev_s);
  EXPECT_DOUBLE_EQ(*e->baseline_median_s, r.baseline->median_s);
  EXPECT_DOUBLE_EQ(*e->sol_fraction, 0.25);
  EXPECT_TRUE(e->verify.at("passed").get<bool>());
  EXPECT_FALSE(e->started.empty());
  EXPECT_FALSE(e->finished.empty());

  // What resume hands back is what evaluate() returned.
  const EvalResult back = e->to_result();
  EXPECT_EQ(back.to_json(), r.to_json());
  const auto runs = s.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].command, "kforge tune gemm");
  EXPECT_EQ(runs[0].fingerprint, kFingerprint);
  EXPECT_EQ(runs[0].evaluations, 1);
  EXPECT_EQ(runs[0].passed, 1);
  EXPECT_FALSE(runs[0].kforge_version.empty());
}

TEST(StoreSchema, FailedEvaluationsAreStoredWithTheirReason) {
  const auto path = fresh_db("failed");
  const EvalRequest req = gemm_request({{"MR", 4}});
  Store s(path);
  s.record(s.begin_run("t", kFingerprint),
           StoredEvaluation::from(req, fake_result(req, 0, Disposition::compile_error), kFingerprint));
  const auto e = s.find(EvalKey::of(req, kFingerprint));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->disposition, "compile_error");
  EXPECT_EQ(e->error, "it failed on purpose");
  EXPECT_FALSE(e->median_s);
  EXPECT_TRUE(e->verify.is_null());
  EXPECT_EQ(e->to_result().disposition, Disposition::compile_error);
}

TEST(StoreSchema, TheFileIsAVersionedKforgeDatabaseInWalMode) {
  const auto path = fresh_db("pragmas");
  { Store s(path); EXPECT_EQ(s.schema_version(), Store::kSchemaVersion); EXPECT_EQ(s.integrity_check(), "ok"); }
  EXPECT_EQ(pragma(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(pragma(path, "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
  EXPECT_EQ(pragma(path, "PRAGMA application_id"), std::to_string(0x6b666f72));
  Store again(path);  // reopening an up-to-date file changes nothing
  EXPECT_EQ(again.schema_version(), Store::kSchemaVersion);
}

TEST(StoreSchema, ADatabaseFromANewerKforgeIsRefused) {
  const auto path = fresh_db("newer");
  { Store s(path); }
  raw_exec(path, "PRAGMA user_version = 99");
  try {
    Store s(path);
    FAIL() << "opened a schema-99 database";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

TEST(StoreSchema, AForeignSqliteFileIsRefusedByName) {
  const auto path = fresh_db("foreign");
  raw_exec(path, "CREATE TABLE t (x INTEGER)");
  try {
    Store s(path);
    FAIL() << "opened a foreign database";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a kforge"), std::string::npos) << e.what();
  }
}

TEST(StoreSchema, ReadOnlyNeverCreatesAFile) {
  const auto path = fresh_db("absent");
  EXPECT_THROW(Store(path, Store::Mode::read_only), StoreError);
  EXPECT_FALSE(open_store_if_exists(path).has_value());
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(StoreSchema, AKernelTunerFileThatIsNotJsonIsRefusedByName) {
  const auto path = fresh_db("badimport");
  const auto bad = path.string() + ".json";
  { std::ofstream(bad) << "this is not json"; }
  Store s(path);
  try {
    (void)import_kerneltuner(s, bad, "kforge db import");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge
