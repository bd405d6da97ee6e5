// Replaying a recorded Kernel Tuner cache: its values (ints, floats, strings) become indices,
// the space is exactly the recorded configurations, failures are failures, recorded time is
// spent, and the numbers a replay reports are right. Also writing kforge's own results back.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "kforge/error.hpp"
#include "kforge/replay.hpp"

namespace kforge {
namespace {

const std::string kTiny = std::string(KFORGE_TEST_DATA) + "/tiny_kt_cache.json";

TEST(Replay, LoadsTheRecordedSpace) {
  const RecordedSpace r = RecordedSpace::load(kTiny);
  EXPECT_EQ(r.device, "Synthetic GPU");
  EXPECT_EQ(r.space.size(), 8u) << "the recorded configurations, not the product of 12";
  EXPECT_EQ(r.space.product(), 12u);
  EXPECT_EQ(r.failed, 3);
  EXPECT_DOUBLE_EQ(r.optimum_ms, 1.0);
  // 64,1.0,row is the optimum; a missing configuration is outside the space.
  const Config best{2, 1, 0}, missing{0, 1, 1};
  ASSERT_TRUE(r.space.contains(best));
  EXPECT_FALSE(r.space.contains(missing));
  EXPECT_EQ(r.space.label(best), "block=64,scale=1.0,layout=row");
  EXPECT_EQ(r.evaluate(best).objective, 1.0);
  EXPECT_DOUBLE_EQ(r.evaluate(best).cost_s, 0.15);
  EXPECT_FALSE(r.evaluate(Config{0, 1, 0}).objective) << "CompilationFailedConfig is a failure";
  EXPECT_DOUBLE_EQ(r.evaluate(Config{0, 1, 0}).cost_s, 0.08) << "and its compile time is spent";
  EXPECT_EQ(r.space.normalized(best), (std::vector<double>{1.0, 1.0, 0.0}));
}

TEST(Replay, BruteForceFindsTheOptimumAndCountsEvaluations) {
  const RecordedSpace r = RecordedSpace::load(kTiny);
  const ReplayResult res = replay(r, "brute", {.evaluations = 100}, 1);
  EXPECT_EQ(res.trace.steps.size(), 8u);
  EXPECT_EQ(res.trace.stopped, "exhausted");
  EXPECT_DOUBLE_EQ(res.ratio, 1.0);
  // Key order: 3, 4, fail, 2, 1.02 (within 5%: 5th), fail, invalid, 1.0 (within 1%: 8th).
  EXPECT_EQ(res.to_within_5, 5);
  EXPECT_EQ(res.to_within_1, 8);
  // Five timed entries at 0.15 s, a compile failure at 0.08 s, a runtime failure at 0.1 s and
  // an invalid configuration that cost nothing.
  EXPECT_NEAR(res.trace.spent_s, 5 * 0.15 + 0.08 + 0.1, 1e-9);
}

TEST(Replay, EveryStrategyStaysInsideTheRecordedSpace) {
  const RecordedSpace r = RecordedSpace::load(kTiny);
  for (const auto& name : strategy_names()) {
    const ReplayResult res = replay(r, name, {.evaluations = 6}, 3);
    EXPECT_EQ(res.trace.steps.size(), 6u) << name;
    std::set<Config> seen;
    for (const Step& s : res.trace.steps) {
      EXPECT_TRUE(r.space.contains(s.config)) << name;
      EXPECT_TRUE(seen.insert(s.config).second) << name;
    }
  }
}

TEST(Replay, ReadsATruncatedCache) {
  std::ifstream in(kTiny);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  text.resize(text.find("\"64,1.0,row\""));  // cut mid-file, as an interrupted run leaves it
  const std::string path = testing::TempDir() + "/truncated_cache.json";
  std::ofstream(path) << text;
  const RecordedSpace r = RecordedSpace::load(path);
  EXPECT_EQ(r.space.size(), 6u);
  EXPECT_DOUBLE_EQ(r.optimum_ms, 1.02);
  std::remove(path.c_str());
}

TEST(Replay, ErrorsNameTheFileAndEntry) {
  nlohmann::json j = nlohmann::json::parse(std::ifstream(kTiny));
  j["cache"]["16,0.5,row"]["block"] = 17;
  try {
    (void)RecordedSpace::from_json(j, "mine.json");
    FAIL();
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("mine.json"), std::string::npos) << m;
    EXPECT_NE(m.find("16,0.5,row"), std::string::npos) << m;
    EXPECT_NE(m.find("block"), std::string::npos) << m;
  }
  EXPECT_THROW((void)RecordedSpace::from_json(nlohmann::json{{"cache", {}}}, "x"), UsageError);
  EXPECT_THROW((void)RecordedSpace::load("/nonexistent/cache.json"), UsageError);
}

TEST(Replay, KforgeResultsRoundTripThroughTheCacheFormat) {
  const KernelSpec k = KernelSpec::from_json_with_source(
      nlohmann::json::parse(R"J({"name": "k", "params": {"A": [1, 2], "B": [8, 16]}})J"), "");
  std::vector<EvalResult> rs(3);
  rs[0].params = {{"A", 1}, {"B", 8}};
  rs[0].disposition = Disposition::passed;
  rs[0].timing = Timing{};
  rs[0].timing->samples = {0.002, 0.003, 0.002};
  rs[0].timing->median_s = 0.002;
  rs[1].params = {{"A", 2}, {"B", 8}};
  rs[1].disposition = Disposition::compile_error;
  rs[2].params = {{"A", 2}, {"B", 16}};
  rs[2].disposition = Disposition::incorrect;
  const nlohmann::json j = kernel_tuner_cache(k, {{"M", 64}}, "cpu test", rs);
  EXPECT_EQ(j["cache"]["1,8"]["time"], 2.0);
  EXPECT_EQ(j["cache"]["2,8"]["time"], "CompilationFailedConfig");
  EXPECT_EQ(j["cache"]["2,16"]["time"], "RuntimeFailedConfig");
  const RecordedSpace r = RecordedSpace::from_json(j);
  EXPECT_EQ(r.space.size(), 3u);
  EXPECT_EQ(r.failed, 2);
  EXPECT_DOUBLE_EQ(r.optimum_ms, 2.0);
}

}  // namespace
}  // namespace kforge
