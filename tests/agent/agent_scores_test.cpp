// agent_scores(): fast_p and the means over agent runs, one latest run per problem instance,
// each judged by its final check. Runs are written straight into a store with random verdicts;
// the expected figures are recomputed here from those verdicts.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "kforge/agent.hpp"
#include "kforge/error.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

struct Verdict {
  bool passed;
  double speedup, sol, score;
};

std::int64_t add_run(Store& store, const std::string& problem, int m, const Verdict& v) {
  nlohmann::ordered_json meta;
  meta["agent"] = {{"problem", problem}, {"sizes", {{"M", m}}}, {"dtype", "fp32"}, {"backend", "cpu"},
                   {"proposer", "test"},
                   {"final", {{"feedback", {{"passed", v.passed}, {"speedup", v.speedup},
                                            {"sol", {{"fraction", v.sol}}}, {"score", v.score}}}}}};
  return store.begin_run("kforge agent (test)", "machine", meta);
}

TEST(AgentScores, FastPOverLatestRunsByTheirFinalCheck) {
  const auto dir = test::scratch_dir("kforge-agent-scores", "fast_p");
  Store store(dir / "results.db");
  (void)store.begin_run("kforge tune gemm", "machine");  // not an agent run: left out
  std::mt19937_64 rng(20261204);
  std::uniform_real_distribution<double> speed(0.3, 3.0), sol(0.05, 0.9);
  std::map<std::string, Verdict> latest;
  for (int i = 0; i < 40; ++i) {
    const std::string problem = "p" + std::to_string(rng() % 13);  // repeats: later runs win
    const Verdict v{rng() % 4 != 0, speed(rng), sol(rng), 120 + speed(rng)};
    add_run(store, problem, 17, v);
    latest[problem] = v;
  }
  const AgentScores s = agent_scores(store);
  ASSERT_EQ(s.runs.size(), latest.size());
  std::map<double, int> fast;
  double log_speed = 0, log_sol = 0, arena = 0;
  int correct = 0;
  for (const auto& [problem, v] : latest) {
    arena += v.score;
    if (!v.passed) continue;
    ++correct;
    log_speed += std::log(v.speedup);
    log_sol += std::log(v.sol);
    for (double p : {0.0, 1.0, 1.5, 2.0}) fast[p] += v.speedup >= p ? 1 : 0;
  }
  const double n = static_cast<double>(latest.size());
  for (const auto& [p, share] : s.fast_p) EXPECT_DOUBLE_EQ(share, fast[p] / n) << "fast_" << p;
  EXPECT_NEAR(s.geomean_speedup, std::exp(log_speed / correct), 1e-12);
  EXPECT_NEAR(s.geomean_sol, std::exp(log_sol / correct), 1e-12);
  EXPECT_NEAR(s.mean_arena, arena / n, 1e-9);
  int superseded = 0;
  for (const auto& r : s.runs) superseded += static_cast<int>(r.superseded);
  EXPECT_EQ(superseded, 40 - static_cast<int>(latest.size()));
}

TEST(AgentScores, ChosenRunsOnlyAndForeignIdsRefused) {
  const auto dir = test::scratch_dir("kforge-agent-scores", "chosen");
  Store store(dir / "results.db");
  const auto tune = store.begin_run("kforge tune gemm", "machine");
  const auto fast = add_run(store, "gemm", 33, {true, 2.5, 0.4, 370});
  (void)add_run(store, "softmax", 33, {false, 0, 0, 20});
  const AgentScores s = agent_scores(store, {fast});
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.fast_p.back().second, 1.0);  // fast_2
  EXPECT_THROW((void)agent_scores(store, {tune}), UsageError);
  EXPECT_THROW((void)agent_scores(store, {fast + 100}), UsageError);
}

}  // namespace
}  // namespace kforge
