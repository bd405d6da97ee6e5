// A stored verdict carries the verification it had, and resume reuses it only for a request
// that asks no more: a quick pass never stands in for a thorough verification, a thorough one
// answers a quick request, and rows from before the rule (schema 2) are evaluated again.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "store_fixtures.hpp"

namespace kforge {
namespace {

using test::fake_result;
using test::fresh_db;
using test::gemm_request;
using test::kFingerprint;

EvalRequest with_verification(bool thorough, bool index_width = true) {
  EvalRequest r = gemm_request({{"MR", 8}});
  r.verify.thorough = thorough;
  r.verify.index_width = index_width;
  return r;
}

// Stores `stored`'s verdict, then asks whether `wanted` may reuse it.
bool reused(const std::string& name, const EvalRequest& stored, const EvalRequest& wanted) {
  Store s(fresh_db(name));
  s.record(s.begin_run("t", kFingerprint), StoredEvaluation::from(stored, fake_result(stored, 1e-4), kFingerprint));
  EXPECT_TRUE(s.find(EvalKey::of(wanted, kFingerprint))) << "the same evaluation, whatever its verification";
  return s.find_reusable(wanted, kFingerprint).has_value();
}

TEST(StoreVerification, AQuickPassIsNotReusedByAThoroughRequest) {
  EXPECT_FALSE(reused("quick-then-thorough", with_verification(false), with_verification(true)));
  EXPECT_NE(verification_shortfall(verification_level(with_verification(false)),
                                   verification_level(with_verification(true))).find("quickly"),
            std::string::npos);
}

TEST(StoreVerification, AThoroughPassIsReusedByAQuickRequestAndByItsEqual) {
  EXPECT_TRUE(reused("thorough-then-quick", with_verification(true), with_verification(false)));
  EXPECT_TRUE(reused("thorough-then-thorough", with_verification(true), with_verification(true)));
  EXPECT_TRUE(reused("quick-then-quick", with_verification(false), with_verification(false)));
}

TEST(StoreVerification, EachWeakerOptionRefusesReuseAndItsStrongerSideAllowsIt) {
  struct Case {
    const char* name;
    void (*weaken)(EvalRequest&);
  };
  const Case cases[] = {
      {"no-index-width", [](EvalRequest& r) { r.verify.index_width = false; }},
      {"fewer-trials", [](EvalRequest& r) { r.verify.trials = 1; }},
      {"fewer-shapes", [](EvalRequest& r) { r.verify.fuzz_shapes = 2; }},
      {"fewer-repeats", [](EvalRequest& r) { r.verify.determinism_runs = 1; }},
      {"one-distribution", [](EvalRequest& r) { r.verify.distributions = {Distribution::normal}; }},
  };
  for (const auto& c : cases) {
    EvalRequest weak = with_verification(true);
    c.weaken(weak);
    EXPECT_FALSE(reused(std::string(c.name) + "-up", weak, with_verification(true))) << c.name;
    EXPECT_TRUE(reused(std::string(c.name) + "-down", with_verification(true), weak)) << c.name;
  }
  EvalRequest bitwise = with_verification(true);
  bitwise.verify.bitwise_repeats = true;
  EXPECT_FALSE(reused("bitwise-up", with_verification(true), bitwise));
  EXPECT_TRUE(reused("bitwise-down", bitwise, with_verification(true)));
  // Another seed is as strong; other fixed scalars verified another instance.
  EvalRequest seeded = with_verification(true);
  seeded.verify.seed = 12345;
  EXPECT_TRUE(reused("other-seed", with_verification(true), seeded));
  EvalRequest fixed = with_verification(true);
  fixed.scalars = {{"alpha", 2.0}};
  EXPECT_FALSE(reused("scalars-fixed", with_verification(true), fixed));
  EXPECT_FALSE(reused("scalars-free", fixed, with_verification(true)));
  // index_width is a thorough check: a quick request neither asks for it nor records it.
  EXPECT_EQ(verification_level(with_verification(false, true)), verification_level(with_verification(false, false)));
}

TEST(StoreVerification, AVerdictReachedBeforeVerificationIsReusedByAnyRequest) {
  const EvalRequest quick = with_verification(false), thorough = with_verification(true);
  Store s(fresh_db("compile-error"));
  s.record(s.begin_run("t", kFingerprint),
           StoredEvaluation::from(quick, fake_result(quick, 0, Disposition::compile_error), kFingerprint));
  EXPECT_TRUE(s.find_reusable(thorough, kFingerprint));
  s.record(s.begin_run("t", kFingerprint),
           StoredEvaluation::from(quick, fake_result(quick, 0, Disposition::incorrect), kFingerprint));
  EXPECT_FALSE(s.find_reusable(thorough, kFingerprint)) << "a quick verdict of any verification is not thorough";
}

void raw_exec(const std::filesystem::path& db, const char* sql) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  sqlite3_close(h);
}

TEST(StoreVerification, ASchemaTwoDatabaseOpensAndItsRowsAreReusedByNoRequest) {
  const auto path = fresh_db("schema2");
  const EvalRequest thorough = with_verification(true), quick = with_verification(false);
  {
    Store s(path);
    s.record(s.begin_run("old kforge", kFingerprint),
             StoredEvaluation::from(thorough, fake_result(thorough, 2e-4), kFingerprint));
  }
  // What kforge wrote before the column existed.
  raw_exec(path, "ALTER TABLE evaluations DROP COLUMN verification; PRAGMA user_version = 2;");
  Store s(path);
  EXPECT_EQ(s.schema_version(), Store::kSchemaVersion);
  EXPECT_EQ(s.integrity_check(), "ok");
  const auto old = s.find(EvalKey::of(quick, kFingerprint));
  ASSERT_TRUE(old) << "the old row is still there";
  EXPECT_TRUE(old->verification.is_null());
  EXPECT_DOUBLE_EQ(*old->median_s, 2e-4);
  EXPECT_FALSE(s.find_reusable(quick, kFingerprint)) << "an unknown verification answers no request";
  // Evaluated again, the row is replaced (same id) and carries its verification from then on.
  const auto id = s.record(s.begin_run("new kforge", kFingerprint),
                           StoredEvaluation::from(quick, fake_result(quick, 1e-4), kFingerprint));
  EXPECT_EQ(id, old->id);
  EXPECT_TRUE(s.find_reusable(quick, kFingerprint));
  EXPECT_FALSE(s.find_reusable(thorough, kFingerprint));
}

}  // namespace
}  // namespace kforge
