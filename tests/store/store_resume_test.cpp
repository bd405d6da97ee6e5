// The unique key: one row per (problem, sizes, dtype, kernel source, params, backend, machine),
// so that resuming a run skips exactly the evaluations already stored.
#include <gtest/gtest.h>

#include "store_fixtures.hpp"

namespace kforge {
namespace {

using test::fake_result;
using test::fresh_db;
using test::gemm_request;
using test::kFingerprint;

TEST(StoreKey, TheSameEvaluationTwiceIsOneRowAndTheNewerWins) {
  Store s(fresh_db("samekey"));
  const auto run1 = s.begin_run("first", kFingerprint);
  const auto run2 = s.begin_run("second", kFingerprint);
  const EvalRequest req = gemm_request({{"MR", 8}});
  const auto id1 = s.record(run1, StoredEvaluation::from(req, fake_result(req, 2e-4), kFingerprint));
  const auto id2 = s.record(run2, StoredEvaluation::from(req, fake_result(req, 1e-4), kFingerprint));
  EXPECT_EQ(id1, id2);
  const auto all = s.evaluations();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_DOUBLE_EQ(*all[0].median_s, 1e-4);
  EXPECT_EQ(all[0].run_id, run2);
}

TEST(StoreKey, EachPartOfTheKeyMakesADifferentEvaluation) {
  Store s(fresh_db("keyparts"));
  const auto run = s.begin_run("t", kFingerprint);
  const EvalRequest base = gemm_request();
  std::vector<std::pair<EvalRequest, std::string>> variants(7, {base, kFingerprint});
  variants[1].first.params = {{"MR", 4}};
  variants[2].first.sizes["K"] = 33;
  variants[3].first.dtype = DType::bf16;
  variants[4].first.kernel.source += "\n// changed";
  variants[5].first.backend = "opencl";
  variants[6].second = machine_fingerprint("cpu", "another machine");
  for (const auto& [req, fp] : variants) s.record(run, StoredEvaluation::from(req, fake_result(req, 1e-4), fp));
  EXPECT_EQ(s.evaluations().size(), variants.size());
  for (const auto& [req, fp] : variants) EXPECT_TRUE(s.find(EvalKey::of(req, fp))) << fp;
  // Parameters spelled as the defaults are the default configuration.
  EvalRequest explicit_defaults = base;
  explicit_defaults.params = base.kernel.defaults;
  EXPECT_EQ(EvalKey::of(explicit_defaults, kFingerprint).params, EvalKey::of(base, kFingerprint).params);
  // Verification settings are not part of what was measured.
  EvalRequest more_trials = base;
  more_trials.verify.trials = 5;
  EXPECT_TRUE(s.find(EvalKey::of(more_trials, kFingerprint)));
}

// The loop `kforge tune --db` runs: look up, evaluate only what is missing, record.
TEST(StoreKey, AResumedLoopRunsOnlyWhatIsNotStored) {
  const auto path = fresh_db("resumeloop");
  const std::vector<std::int64_t> mrs = {4, 6, 8, 12, 14};
  auto run_loop = [&](std::size_t stop_after, int& evaluated) {
    Store s(path);
    const auto run = s.begin_run("loop", kFingerprint);
    std::vector<EvalResult> results;
    for (std::size_t i = 0; i < mrs.size() && evaluated < static_cast<int>(stop_after); ++i) {
      const EvalRequest req = gemm_request({{"MR", mrs[i]}, {"NV", 1}});
      if (auto hit = s.find(EvalKey::of(req, kFingerprint))) {
        results.push_back(hit->to_result());
        continue;
      }
      ++evaluated;
      results.push_back(fake_result(req, 1e-4 * static_cast<double>(i + 1)));
      s.record(run, StoredEvaluation::from(req, results.back(), kFingerprint));
    }
    return results;
  };
  int first = 0, second = 0;
  (void)run_loop(2, first);  // "killed" after two evaluations
  const auto results = run_loop(100, second);
  EXPECT_EQ(first, 2);
  EXPECT_EQ(second, 3) << "the resumed loop repeated a stored evaluation";
  ASSERT_EQ(results.size(), mrs.size());
  EXPECT_DOUBLE_EQ(results[0].timing->median_s, 1e-4) << "the stored result is used as measured";
  EXPECT_EQ(Store(path).evaluations().size(), mrs.size());
}

}  // namespace
}  // namespace kforge
