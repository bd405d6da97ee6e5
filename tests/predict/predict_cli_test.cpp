// `kforge features`, `kforge predict` (train, one configuration, rank) and `kforge tune --prior`
// end to end through the binary, and their exit code 2 with a clear message on bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "predict/synthetic_law.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using test::kHaveXgboost;

TEST(PredictCli, FeaturesOfALibraryKernel) {
  const auto r = test::kforge_cli("features gemm --sizes M=100,N=70,K=33 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = test::parse_or_fail(r);
  EXPECT_EQ(j["problem_features"]["size_M"], 100);
  EXPECT_DOUBLE_EQ(j["problem_features"]["flops"].get<double>(), 2.0 * 100 * 70 * 33);
  EXPECT_GE(j["problem_features"]["reduction_length"].get<double>(), 33);  // K, plus alpha/beta terms
  EXPECT_FALSE(j["config_features"].empty());
  EXPECT_EQ(test::kforge_cli("features gemm --params NOPE=3").exit_code, 2);
}

TEST(PredictCli, TrainPredictRankAndTuneWithPrior) {
  if (!kHaveXgboost) GTEST_SKIP() << "built without XGBoost";
  const auto dir = test::scratch_dir("kforge-predict-cli", "train");
  const std::string cache = (dir / "law.json").string(), model = (dir / "model.json").string();
  std::ofstream(cache) << test::law_cache(0.05, 11).dump();
  auto r = test::kforge_cli("predict --train --space '" + cache + "' --out '" + model + "' --trees 60 --cv 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json t = test::parse_or_fail(r);
  ASSERT_EQ(t["cv"].size(), 3u);
  EXPECT_GT(t["cv"][0]["spearman"].get<double>(), 0.85);

  r = test::kforge_cli("predict --model '" + model + "' --params block_size_x=32,block_size_y=8,tile_size_x=4,use_flag=0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json p = test::parse_or_fail(r);
  EXPECT_NEAR(p["predicted_ms"].get<double>(), test::law_ms(32, 8, 4, 0), 0.1);
  EXPECT_LE(p["interval_ms"][0].get<double>(), p["predicted_ms"].get<double>());
  EXPECT_GE(p["interval_ms"][1].get<double>(), p["predicted_ms"].get<double>());

  r = test::kforge_cli("predict --model '" + model + "' --rank --space '" + cache + "' --top 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json k = test::parse_or_fail(r);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_LT(k[0]["recorded_ms"].get<double>(), 1.15);  // the law's optimum is 1.0 (+-5% noise)

  // The prior guides bayes on the same space: within 5% of the optimum in a few evaluations.
  r = test::kforge_cli("tune --replay '" + cache + "' --prior '" + model + "' --budget 30 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json tr = test::parse_or_fail(r);
  ASSERT_TRUE(tr.contains("result")) << tr.dump();
  EXPECT_GT(tr["result"]["evaluations_to_within_5pct"].get<int>(), 0);
  EXPECT_LE(tr["result"]["evaluations_to_within_5pct"].get<int>(), 10);

  // Missing features and a non-bayes strategy: exit 2 naming what to fix.
  r = test::kforge_cli("predict --model '" + model + "' --params block_size_x=32");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tile_size_x"), std::string::npos) << r.err;
  r = test::kforge_cli("tune --replay '" + cache + "' --prior '" + model + "' --strategy random --budget 5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bayes"), std::string::npos) << r.err;
}

// A model trained from the results store: a real tuning run of the library's cpu gemm writes
// the store, `predict --train PROBLEM --db` exports and trains on every stored evaluation, and
// the model predicts a configuration of that kernel; a store without the problem exits 2.
TEST(PredictCli, TrainFromTheStoreOfATuningRun) {
  if (!kHaveXgboost) GTEST_SKIP() << "built without XGBoost";
  const auto dir = test::scratch_dir("kforge-predict-cli", "store");
  const std::string db = (dir / "results.db").string(), model = (dir / "model.json").string();
  auto r = test::kforge_cli("tune gemm --backend cpu --size M=41,N=37,K=19 --strategy random --budget 10 --threads 1 "
                            "--db '" + db + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json tuned = test::parse_or_fail(r);
  r = test::kforge_cli("predict --train gemm --db '" + db + "' --backend cpu --out '" + model + "' --trees 20 --cv 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json t = test::parse_or_fail(r);
  EXPECT_EQ(t["info"]["source"]["kernel"], "gemm.cpu");
  EXPECT_GE(t["info"]["rows"].get<int>(), 5);  // the passed evaluations of the 10
  EXPECT_LE(t["info"]["rows"].get<int>(), 10);
  ASSERT_FALSE(t["features"].empty());
  // The tuned winner's parameters (one result per backend) are a configuration of the kernel.
  const nlohmann::json best = tuned.at(0).at("best").at("params");
  std::string params;
  for (const auto& [k, v] : best.items()) params += (params.empty() ? "" : ",") + k + "=" + std::to_string(v.get<long long>());
  r = test::kforge_cli("predict --model '" + model + "' --params " + params + " --json");
  ASSERT_EQ(r.exit_code, 0) << params << ": " << r.err;
  EXPECT_GT(test::parse_or_fail(r)["predicted_ms"].get<double>(), 0.0);
  r = test::kforge_cli("predict --train softmax --db '" + db + "' --out '" + model + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no evaluations of softmax"), std::string::npos) << r.err;
}

// Similarity on a recorded space: representatives whose weights cover the space and whose
// estimate is near the recorded total; a configuration's neighbours differ from it in little.
TEST(PredictCli, RepresentativesAndNeighboursOfARecordedSpace) {
  const auto dir = test::scratch_dir("kforge-predict-cli", "similar");
  const std::string cache = (dir / "law.json").string();
  std::ofstream(cache) << test::law_cache(0.02, 3).dump();
  auto r = test::kforge_cli("predict --space '" + cache + "' --representatives 20 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rep = test::parse_or_fail(r);
  ASSERT_EQ(rep["representatives"].size(), 20u);
  std::size_t covered = 0;
  for (const auto& x : rep["representatives"]) covered += x["weight"].get<std::size_t>();
  EXPECT_EQ(covered, test::kBlockX.size() * test::kBlockY.size() * test::kTile.size() * test::kFlag.size());
  EXPECT_LT(std::fabs(rep["relative_error"].get<double>()), 0.5);
  r = test::kforge_cli("predict --space '" + cache + "' --neighbours 2 --params block_size_x=32,block_size_y=8,tile_size_x=4,use_flag=0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json nb = test::parse_or_fail(r)["neighbours"];
  ASSERT_EQ(nb.size(), 2u);
  for (const auto& x : nb) EXPECT_NE(x["config"].get<std::string>().find("block_size_"), std::string::npos);
  EXPECT_EQ(test::kforge_cli("predict --space '" + cache + "' --neighbours 2 --params block_size_x=33").exit_code, 2);
}

TEST(PredictCli, BadModelFilesExitTwoNamingTheFile) {
  const auto dir = test::scratch_dir("kforge-predict-cli", "bad");
  const std::string bad = (dir / "not_a_model.json").string();
  std::ofstream(bad) << "[1, 2, 3]";
  for (const std::string& args : {"predict --model '" + bad + "' --params a=1",
                                  "predict --model '" + (dir / "missing.json").string() + "' --params a=1",
                                  "tune --replay '" + test::data_path("tiny_kt_cache.json") + "' --prior '" + bad + "'"}) {
    const auto r = test::kforge_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find(dir.string()), std::string::npos) << args << ": " << r.err;
  }
  const auto r = test::kforge_cli("predict --params a=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge
