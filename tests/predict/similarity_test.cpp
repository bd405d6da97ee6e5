// Kernel similarity (kforge/predict.hpp): the embedding scales features so none dominates by
// its unit, nearest neighbours find a configuration's own neighbourhood, and k representatives
// chosen without looking at times estimate a whole space's total time better than k random
// configurations do (on the synthetic law of synthetic_law.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kforge/replay.hpp"
#include "predict/synthetic_law.hpp"

namespace kforge {
namespace {

Features row(double a, double b, double c) {
  Features f;
  f.add("a", a);
  f.add("b", b);
  f.add("constant", c);
  return f;
}

TEST(Similarity, EmbeddingStandardizesAndIgnoresConstants) {
  const Embedding e = embed({row(1, -1, 7), row(10, 0, 7), row(100, 1, 7), row(1000, 2, 7)});
  ASSERT_EQ(e.points.size(), 4u);
  for (const auto& p : e.points) EXPECT_EQ(p[2], 0.0);  // a constant says nothing
  // `a` is positive: log-scaled, so 1, 10, 100, 1000 are evenly spaced like `b`'s -1, 0, 1, 2.
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(e.points[i][0], e.points[i][1], 1e-9);
  EXPECT_THROW((void)embed({row(1, 1, 1), Features{}}), UsageError);
}

TEST(Similarity, NearestNeighboursStartWithThePointItself) {
  const Embedding e = embed({row(1, 0, 0), row(2, 0, 0), row(64, 5, 0), row(3, 0, 0)});
  const auto n = nearest(e, e.points[1], 3);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0], 1u);
  EXPECT_NE(std::find(n.begin(), n.end(), 0u), n.end());
  EXPECT_EQ(std::find(n.begin(), n.end(), 2u), n.end());  // the far one is not among the three
}

TEST(Similarity, RepresentativesCoverTheSetAndBeatRandomSampling) {
  const RecordedSpace r = RecordedSpace::from_json(test::law_cache(0.02, 5), "law");
  const Dataset d = dataset(r);
  const Embedding e = embed(d.rows);
  const double truth = std::accumulate(d.time_ms.begin(), d.time_ms.end(), 0.0);
  std::vector<double> rep_err, rand_err;
  for (std::uint64_t seed = 1; seed <= 9; ++seed) {
    const Representatives rep = representatives(e, 12, seed);
    ASSERT_EQ(rep.members.size(), rep.weights.size());
    EXPECT_EQ(std::accumulate(rep.weights.begin(), rep.weights.end(), std::size_t{0}), d.rows.size());
    rep_err.push_back(std::fabs(estimate_total(rep, d.time_ms) / truth - 1));
    // k random configurations, their mean times the set's size.
    std::vector<std::size_t> idx(d.rows.size());
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    for (std::size_t i = 0; i < 12; ++i) std::swap(idx[i], idx[i + random_bits(seed, 77, i) % (idx.size() - i)]);
    double sum = 0;
    for (std::size_t i = 0; i < 12; ++i) sum += d.time_ms[idx[i]];
    rand_err.push_back(std::fabs(sum / 12 * static_cast<double>(d.rows.size()) / truth - 1));
  }
  std::sort(rep_err.begin(), rep_err.end());
  std::sort(rand_err.begin(), rand_err.end());
  EXPECT_LT(rep_err[4], rand_err[4]) << "median error of representatives " << rep_err[4] << " vs random " << rand_err[4];
  // Every distinct point its own cluster: the estimate is the truth.
  const Representatives all = representatives(e, d.rows.size(), 3);
  EXPECT_NEAR(estimate_total(all, d.time_ms), truth, 1e-9 * truth);
  EXPECT_THROW((void)representatives(e, 0, 1), UsageError);
}

}  // namespace
}  // namespace kforge
