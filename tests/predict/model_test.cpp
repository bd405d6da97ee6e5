// The performance model: it recovers a known law on held-out points, survives a save/load
// round trip bit for bit, and refuses bad files and missing features with a clear message;
// the bayes strategy's prior finds the optimum first when the prior knows it.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "kforge/error.hpp"
#include "kforge/predict.hpp"
#include "kforge/replay.hpp"
#include "kforge/strategy.hpp"
#include "predict/synthetic_law.hpp"
#include "test_util.hpp"
#include "tune/synthetic_space.hpp"

namespace kforge {
namespace {

using test::kHaveXgboost;

#define NEED_XGBOOST() \
  if (!kHaveXgboost) GTEST_SKIP() << "built without XGBoost"

TEST(PredictMetrics, SpearmanAndMape) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 0.9487, 1e-3);  // ties get their average rank
  EXPECT_NEAR(mape({1.1, 0.9}, {1.0, 1.0}), 0.1, 1e-12);
  EXPECT_THROW((void)spearman({1}, {1}), UsageError);
}

TEST(PredictFeatures, DerivedFromParameterNames) {
  const Features f = param_features({{"block_size_x", 32}, {"block_size_y", 4}, {"tile_size_x", 2}, {"tile_size_y", 3}});
  const nlohmann::json j = f.to_json();
  EXPECT_EQ(j["block_size_x"], 32);
  EXPECT_EQ(j["d_threads_xy"], 128);
  EXPECT_EQ(j["d_tile_area"], 6);
  EXPECT_EQ(j["d_block_work"], 768);
  EXPECT_FALSE(j.contains("d_threads_xyz"));  // no block_size_z: not derived
  const nlohmann::json g = param_features({{"MWG", 64}, {"NWG", 32}, {"MDIMC", 8}, {"NDIMC", 16}}).to_json();
  EXPECT_EQ(g["d_work_per_thread"], 16);
}

// Train on 60% of the law's configurations, predict the other 40%: rank correlation and MAPE
// on points never seen.
TEST(PredictModel, RecoversAKnownLawOnHeldOutPoints) {
  NEED_XGBOOST();
  const RecordedSpace r = RecordedSpace::from_json(test::law_cache(0.05, 7), "law");
  const Dataset d = dataset(r);
  ASSERT_EQ(d.rows.size(), 300u);
  SearchRng rng(3);
  Dataset tr, te;
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    Dataset& to = rng.unit() < 0.6 ? tr : te;
    to.rows.push_back(d.rows[i]);
    to.time_ms.push_back(d.time_ms[i]);
  }
  for (const char* kind : {"gbt", "forest"}) {
    ModelOptions o;
    o.kind = kind;
    o.trees = 100;
    o.threads = 1;
    o.interval = false;
    const PerfModel m = PerfModel::train(tr.rows, tr.time_ms, o);
    std::vector<double> p = m.predict_log(te.rows);
    for (double& v : p) v = std::exp(v);
    EXPECT_GT(spearman(p, te.time_ms), 0.9) << kind;
    // The noise alone is 2.5% on average; a constant guess is ~40% off. A forest of 180 points
    // averages coarser leaves than boosting does.
    EXPECT_LT(mape(p, te.time_ms), std::string(kind) == "gbt" ? 0.10 : 0.20) << kind;
  }
}

TEST(PredictModel, CrossValidationScoresEveryFold) {
  NEED_XGBOOST();
  const Dataset d = dataset(RecordedSpace::from_json(test::law_cache(0.05, 8), "law"));
  ModelOptions o;
  o.trees = 60;
  o.threads = 1;
  const std::vector<FoldScore> f = cross_validate(d, 5, o);
  ASSERT_EQ(f.size(), 5u);
  for (const FoldScore& s : f) {
    EXPECT_GT(s.spearman, 0.85);
    EXPECT_LT(s.mape, 0.12);
  }
}

TEST(PredictModel, SaveLoadGivesIdenticalPredictionsAndInterval) {
  NEED_XGBOOST();
  const RecordedSpace r = RecordedSpace::from_json(test::law_cache(0.1, 9), "law");
  ModelOptions o;
  o.trees = 40;
  o.threads = 1;
  const PerfModel m = PerfModel::train(r, o);
  const auto path = test::scratch_dir("kforge-predict", "roundtrip") / "model.json";
  m.save(path.string());
  const PerfModel back = PerfModel::load(path.string());
  EXPECT_EQ(back.feature_names(), m.feature_names());
  EXPECT_EQ(back.predict_space(r.space), m.predict_space(r.space));
  const Prediction a = m.predict(config_features(r.space, r.space.at(17))), b = back.predict(config_features(r.space, r.space.at(17)));
  EXPECT_EQ(a.time_ms, b.time_ms);
  EXPECT_EQ(a.lo_ms, b.lo_ms);
  EXPECT_EQ(a.hi_ms, b.hi_ms);
  EXPECT_LT(a.lo_ms, a.time_ms);  // 10% noise: a real interval around the guess
  EXPECT_GT(a.hi_ms, a.time_ms);
}

TEST(PredictModel, BadFilesAndMissingFeaturesAreUsageErrors) {
  const auto dir = test::scratch_dir("kforge-predict", "bad");
  std::ofstream(dir / "garbage.json") << "{not json";
  std::ofstream(dir / "other.json") << R"({"hello": 1})";
  for (const char* f : {"garbage.json", "other.json", "absent.json"}) {
    try {
      (void)PerfModel::load((dir / f).string());
      ADD_FAILURE() << f << " loaded";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
  if (!kHaveXgboost) return;
  ModelOptions o;
  o.trees = 20;
  o.threads = 1;
  o.interval = false;
  const PerfModel m = PerfModel::train(RecordedSpace::from_json(test::law_cache(0.05, 1), "law"), o);
  try {
    (void)m.predict(param_features({{"block_size_x", 32}, {"block_size_y", 4}}));
    ADD_FAILURE() << "predicted without tile_size_x and use_flag";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tile_size_x"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("use_flag"), std::string::npos) << e.what();
  }
}

// A prior that knows the objective exactly: bayes asks for the optimum first. A prior that is
// exactly wrong (the objective upside down) must not stop it from finding the optimum later.
TEST(PredictPrior, APriorThatKnowsTheOptimumFindsItFirst) {
  const Space s = test::synthetic_space(3, 9, [](const Config& c) { return (c[0] + c[1] + c[2]) % 4 != 1; });
  std::uint64_t best = 0;
  for (std::uint64_t r = 0; r < s.size(); ++r)
    if (test::smooth_objective(s, s.at(r)) < test::smooth_objective(s, s.at(best))) best = r;
  for (double sign : {1.0, -1.0}) {
    StrategyOptions o;
    o.budget = 60;
    o.prior = [sign](const Space& sp) {
      std::vector<double> p(sp.size());
      for (std::uint64_t r = 0; r < sp.size(); ++r) p[r] = sign * std::log(test::smooth_objective(sp, sp.at(r)));
      return p;
    };
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      auto st = make_strategy("bayes", s, seed, o);
      int found = -1;
      for (int i = 0; i < o.budget && found < 0; ++i) {
        const auto c = st->ask();
        ASSERT_TRUE(c);
        if (*s.rank(*c) == best) found = i + 1;
        st->tell(*c, test::smooth_objective(s, *c));
      }
      if (sign > 0) EXPECT_EQ(found, 1) << "seed " << seed;
      else EXPECT_GT(found, 0) << "an upside-down prior, seed " << seed;  // within the budget
    }
  }
  StrategyOptions o;
  o.prior = [](const Space& sp) { return std::vector<double>(sp.size(), 0.0); };
  EXPECT_THROW((void)make_strategy("random", s, 1, o), UsageError);
  o.prior = [](const Space&) { return std::vector<double>(3, 0.0); };
  EXPECT_THROW((void)make_strategy("bayes", s, 1, o), UsageError);
}

}  // namespace
}  // namespace kforge
