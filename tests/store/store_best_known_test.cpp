// Best-known parameters: the fastest passed configuration of the same problem instance on the
// same machine that the kernel still accepts; nothing when there is none.
#include <gtest/gtest.h>

#include "store_fixtures.hpp"

namespace kforge {
namespace {

using test::fake_result;
using test::fresh_db;
using test::gemm_request;
using test::kFingerprint;

void put(Store& s, std::int64_t run, const EvalRequest& req, double median_s,
         Disposition d = Disposition::passed, const std::string& fp = kFingerprint) {
  s.record(run, StoredEvaluation::from(req, fake_result(req, median_s, d), fp));
}

TEST(BestKnown, TheFastestPassedConfigurationOfThisInstanceAndMachineWins) {
  Store s(fresh_db("best"));
  const auto run = s.begin_run("t", kFingerprint);
  put(s, run, gemm_request({{"MR", 4}, {"NV", 1}}), 3e-4);
  put(s, run, gemm_request({{"MR", 8}, {"NV", 1}}), 2e-4);   // the best
  put(s, run, gemm_request({{"MR", 12}, {"NV", 1}}), 1e-4, Disposition::incorrect);  // fast, wrong
  put(s, run, gemm_request({{"MR", 6}, {"NV", 1}}), 5e-5, Disposition::passed,
      machine_fingerprint("cpu", "another machine"));         // another machine
  put(s, run, gemm_request({{"MR", 6}, {"NV", 2}}, {{"M", 65}}), 4e-5);  // other sizes
  EvalRequest bf16 = gemm_request({{"MR", 6}, {"NV", 3}});
  bf16.dtype = DType::bf16;
  put(s, run, bf16, 3e-5);                                     // another dtype

  const auto best = best_known(s, gemm_request(), kFingerprint);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->params().at("MR"), 8);
  EXPECT_DOUBLE_EQ(*best->median_s, 2e-4);
  EXPECT_FALSE(best_known(s, gemm_request({}, {{"M", 999}}), kFingerprint)) << "nothing for unseen sizes";
  EXPECT_FALSE(best_known(s, gemm_request(), machine_fingerprint("cpu", "a third machine")));
}

TEST(BestKnown, ConfigurationsTheKernelNoLongerAcceptsAreSkipped) {
  Store s(fresh_db("best-stale"));
  const auto run = s.begin_run("t", kFingerprint);
  put(s, run, gemm_request({{"MR", 8}, {"NV", 1}}), 2e-4);
  // Faster, but stored under a kernel whose space had a parameter this one lacks.
  StoredEvaluation stale = StoredEvaluation::from(gemm_request({{"MR", 6}}), fake_result(gemm_request(), 1e-4), kFingerprint);
  auto p = stale.params();
  p["OLD_PARAM"] = 3;
  stale.key.params = canonical_json(p);
  s.record(run, stale);
  // Faster still, but breaking a constraint (MC % MR == 0) of today's kernel.
  StoredEvaluation broken = StoredEvaluation::from(gemm_request({{"MR", 6}}), fake_result(gemm_request(), 5e-5), kFingerprint);
  p = broken.params();
  p["MC"] = 100;
  broken.key.params = canonical_json(p);
  s.record(run, broken);
  const auto best = best_known(s, gemm_request(), kFingerprint);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->params().at("MR"), 8);
}

TEST(BestKnown, TheSameKernelSourceIsPreferredOverAnOlderOne) {
  Store s(fresh_db("best-source"));
  const auto run = s.begin_run("t", kFingerprint);
  EvalRequest old_source = gemm_request({{"MR", 4}, {"NV", 1}});
  old_source.kernel.source += "\n// an older version";
  put(s, run, old_source, 1e-4);
  EXPECT_EQ(best_known(s, gemm_request(), kFingerprint)->params().at("MR"), 4) << "better than nothing";
  put(s, run, gemm_request({{"MR", 8}, {"NV", 1}}), 2e-4);
  EXPECT_EQ(best_known(s, gemm_request(), kFingerprint)->params().at("MR"), 8);
}

}  // namespace
}  // namespace kforge
