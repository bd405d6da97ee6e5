// Training from the results store across sizes: evaluations of gemm stored at five sizes follow
// a known law whose best tile moves with size; the store's rows (sizes, parameters, median
// times; passed ones of the dtype only) train a model that recovers the law's best tile at each
// size, and `kforge predict gemm --train --db` takes that path. Poisoned rows (failed, other
// dtype) would make a tile of 32 or 16 win if they were let in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "kforge/problem.hpp"
#include "predict/store_data.hpp"
#include "predict/synthetic_law.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

const std::vector<std::int64_t> kSizes{32, 48, 64, 96, 128}, kTiles{1, 2, 4, 8, 16};
std::int64_t best_tile(std::int64_t n) { return n <= 48 ? 2 : 8; }

// Seconds: the FLOPs at 10 GFLOP/s, slowed by how far (in octaves) the tile is from the best.
double law_s(const Problem& p, std::int64_t n, std::int64_t tile) {
  const double off = std::log2(static_cast<double>(tile) / static_cast<double>(best_tile(n)));
  return p.flops({{"M", n}, {"N", n}, {"K", n}}) * 1e-10 * (1 + off * off / 4);
}

StoredEvaluation stored(std::int64_t n, std::int64_t tile, double seconds, const std::string& disposition = "passed",
                        const std::string& dtype = "fp32") {
  StoredEvaluation e;
  e.key.problem = "gemm";
  e.key.sizes = nlohmann::json{{"K", n}, {"M", n}, {"N", n}}.dump();
  e.key.dtype = dtype;
  e.key.source_hash = "synthetic";
  e.key.params = nlohmann::json{{"TILE", tile}}.dump();
  e.key.backend = "cpu";
  e.key.fingerprint = "machine";
  e.kernel = "gemm.synthetic";
  e.disposition = disposition;
  e.median_s = e.min_s = e.mean_s = seconds;
  e.samples = {seconds};
  return e;
}

// The law's evaluations, plus two poisoned ones per size that would win if they counted.
std::filesystem::path law_store(const std::string& name) {
  const auto p = find_problem("gemm");
  const auto db = test::scratch_dir("kforge-store-training", name) / "results.db";
  Store store(db);
  const auto run = store.begin_run("kforge tune gemm (synthetic law)", "machine");
  for (const std::int64_t n : kSizes) {
    for (const std::int64_t t : kTiles) store.record(run, stored(n, t, law_s(*p, n, t)));
    store.record(run, stored(n, 16 * 2, 1e-9, "incorrect"));  // wrong and "fast": never a row
    store.record(run, stored(n, 16, 1e-9, "passed", "fp64"));  // another dtype: not these rows
  }
  return db;
}

TEST(StoreTraining, RowsAreThePassedEvaluationsOfTheDtypeAtTheirSizes) {
  const auto p = find_problem("gemm");
  const Store store(law_store("rows"), Store::Mode::read_only);
  StoreQuery q;
  q.problem = "gemm";
  const StoreDataset d = store_dataset(*p, DType::fp32, store.evaluations(q));
  ASSERT_EQ(d.data.rows.size(), kSizes.size() * kTiles.size());
  EXPECT_EQ(d.skipped, 2 * static_cast<int>(kSizes.size()));
  EXPECT_EQ(d.sizes.size(), kSizes.size());
  // Each row: the problem's features at its sizes, then the configuration's; its time in ms.
  const Features& f = d.data.rows.front();
  const auto at = [&](const std::string& name) {
    const auto it = std::find(f.names.begin(), f.names.end(), name);
    EXPECT_NE(it, f.names.end()) << name;
    return it == f.names.end() ? -1.0 : f.values[static_cast<std::size_t>(it - f.names.begin())];
  };
  const auto n = static_cast<std::int64_t>(at("size_M"));
  const auto tile = static_cast<std::int64_t>(at("TILE"));
  EXPECT_DOUBLE_EQ(at("flops"), p->flops({{"M", n}, {"N", n}, {"K", n}}));
  EXPECT_NEAR(d.data.time_ms.front(), law_s(*p, n, tile) * 1e3, 1e-9 * d.data.time_ms.front());
}

TEST(StoreTraining, AModelFromTheStoreRecoversTheBestTileAtEachSize) {
  if (!test::kHaveXgboost) GTEST_SKIP() << "built without XGBoost";
  const auto p = find_problem("gemm");
  const Store store(law_store("model"), Store::Mode::read_only);
  StoreQuery q;
  q.problem = "gemm";
  const StoreDataset d = store_dataset(*p, DType::fp32, store.evaluations(q));
  ModelOptions o;
  o.trees = 200;
  o.interval = false;  // the fit alone: no out-of-fold refits
  const PerfModel m = PerfModel::train(d.data.rows, d.data.time_ms, o);
  for (const std::int64_t n : kSizes) {
    const Features at = problem_features(*p, {{"M", n}, {"N", n}, {"K", n}}, DType::fp32);
    std::vector<Features> rows;
    for (const std::int64_t t : kTiles) rows.push_back(join(at, param_features({{"TILE", static_cast<double>(t)}})));
    const std::vector<double> predicted = m.predict_log(rows);
    EXPECT_EQ(kTiles[argmin(predicted)], best_tile(n)) << "size " << n;
    for (std::size_t k = 0; k < kTiles.size(); ++k)  // log(ms): within 25% of the law
      EXPECT_NEAR(predicted[k], std::log(law_s(*p, n, kTiles[k]) * 1e3), std::log(1.25)) << n << " " << kTiles[k];
  }
}

TEST(StoreTraining, PredictTrainDbTrainsAcrossTheStoredSizes) {
  if (!test::kHaveXgboost) GTEST_SKIP() << "built without XGBoost";
  const auto db = law_store("cli");
  const auto model = db.parent_path() / "model.json";
  const auto r = test::kforge_cli("predict gemm --train --db '" + db.string() + "' --out '" + model.string() + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = test::parse_or_fail(r);
  EXPECT_EQ(j["rows"].get<std::size_t>(), kSizes.size() * kTiles.size());
  EXPECT_EQ(j["sizes"].size(), kSizes.size());
  EXPECT_EQ(j["skipped"].get<int>(), 2 * static_cast<int>(kSizes.size()));
  const auto& names = j["features"];
  EXPECT_NE(std::find(names.begin(), names.end(), "size_M"), names.end()) << names.dump();
}

}  // namespace
}  // namespace kforge
