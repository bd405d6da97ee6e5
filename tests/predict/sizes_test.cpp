// Parameter prediction for sizes never tuned: on a law where the best tile is a known step
// function of the size, a model trained at some sizes picks the law's best tile at sizes it
// never saw; and the nearest-size baseline measures distance in log2 of the sizes.
#include <gtest/gtest.h>

#include <cmath>

#include "kforge/predict.hpp"
#include "predict/synthetic_law.hpp"

namespace kforge {
namespace {

// time(N, T) = N * (1 + 0.3 * (log2 T - b(N))^2), b(N) = floor(log2(N) / 2): the best tile
// doubles every fourfold growth of N.
double best_log2_tile(double n) { return std::floor(std::log2(n) / 2); }
double law_ms(double n, double tile) { return n * (1 + 0.3 * std::pow(std::log2(tile) - best_log2_tile(n), 2)); }

Features row(double n, double tile) {
  Features f;
  f.add("size_N", n);
  f.add("flops", 2 * n * n);
  return join(f, param_features({{"T", tile}, {"U", 1}}));
}

TEST(SizePrediction, RecoversTheBestTileAsAFunctionOfSize) {
  if (!test::kHaveXgboost) GTEST_SKIP() << "built without XGBoost";
  std::vector<Features> rows;
  std::vector<double> ms;
  for (int k = 4; k <= 14; ++k)
    for (int t = 0; t <= 7; ++t) {
      rows.push_back(row(std::ldexp(1.0, k), std::ldexp(1.0, t)));
      ms.push_back(law_ms(std::ldexp(1.0, k), std::ldexp(1.0, t)));
    }
  ModelOptions o;
  o.interval = false;
  o.trees = 200;
  const PerfModel m = PerfModel::train(rows, ms, o);
  // Held out: 1.4 * 2^k (never tuned); the law's best there is b(1.4 * 2^k).
  for (int k = 4; k <= 13; ++k) {
    const double n = 1.4 * std::ldexp(1.0, k);
    std::vector<Features> candidates;
    for (int t = 0; t <= 7; ++t) candidates.push_back(row(n, std::ldexp(1.0, t)));
    const std::size_t pick = argmin(m.predict_log(candidates));
    EXPECT_EQ(static_cast<double>(pick), best_log2_tile(n)) << "N = " << n;
  }
}

TEST(SizePrediction, NearestSizeIsNearestInLogOfEverySize) {
  const std::vector<Sizes> tuned{{{"M", 64}, {"N", 64}}, {{"M", 256}, {"N", 256}}, {{"M", 1024}, {"N", 64}}};
  EXPECT_EQ(nearest_size(tuned, {{"M", 100}, {"N", 70}}), 0u);
  EXPECT_EQ(nearest_size(tuned, {{"M", 200}, {"N", 300}}), 1u);
  EXPECT_EQ(nearest_size(tuned, {{"M", 900}, {"N", 40}}), 2u);
  // In log2, 140 is nearer 256 (0.87 away) than 64 (1.13): linear distance would say 64.
  EXPECT_EQ(nearest_size(tuned, {{"M", 140}, {"N", 140}}), 1u);
  EXPECT_THROW((void)nearest_size({}, {{"M", 1}}), std::exception);
}

TEST(SizePrediction, JoinKeepsBothSidesInOrder) {
  Features a, b;
  a.add("size_M", 3);
  b.add("MR", 6);
  const Features j = join(a, b);
  ASSERT_EQ(j.names.size(), 2u);
  EXPECT_EQ(j.names[0], "size_M");
  EXPECT_EQ(j.values[1], 6);
  EXPECT_EQ(argmin({3, 1, 2, 1}), 1u);
}

}  // namespace
}  // namespace kforge
