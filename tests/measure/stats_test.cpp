// Statistics on known samples, the stopping criteria on synthetic timer sequences, and the
// Mann-Whitney U test on data with known p-values (scipy.stats.mannwhitneyu, asymptotic).
#include <gtest/gtest.h>

#include <cmath>

#include "kforge/measure.hpp"

namespace kforge {
namespace {

TEST(Summarize, KnownSamples) {
  const Timing t = summarize({3, 1, 4, 1, 5, 9, 2, 6});
  EXPECT_DOUBLE_EQ(t.median_s, 3.5);
  EXPECT_DOUBLE_EQ(t.min_s, 1);
  EXPECT_DOUBLE_EQ(t.max_s, 9);
  EXPECT_DOUBLE_EQ(t.mean_s, 31.0 / 8);
  EXPECT_NEAR(t.stdev_s, 2.74837, 1e-5);  // sample stdev (n - 1)
  EXPECT_DOUBLE_EQ(t.mad_s, 2);           // |x - 3.5| = .5 2.5 .5 2.5 1.5 5.5 1.5 2.5
  EXPECT_EQ(t.outliers, 0);
  EXPECT_EQ(t.repetitions(), 8);
  ASSERT_EQ(t.samples.size(), 8u);
  EXPECT_EQ(t.samples[0], 3);  // the order measured is kept
}

TEST(Summarize, OutliersAreCountedNotDropped) {
  std::vector<double> s(20, 1.0);
  for (int i = 0; i < 20; ++i) s[i] += 0.01 * (i % 5);  // 1.00 .. 1.04
  s.push_back(5.0);
  const Timing t = summarize(s);
  EXPECT_EQ(t.outliers, 1);
  EXPECT_EQ(t.repetitions(), 21);
  EXPECT_DOUBLE_EQ(t.max_s, 5.0);  // still in every figure
  EXPECT_GT(t.mean_s, 1.1);
}

TEST(Summarize, EmptyAndSingle) {
  EXPECT_EQ(summarize({}).repetitions(), 0);
  const Timing one = summarize({2.5});
  EXPECT_DOUBLE_EQ(one.median_s, 2.5);
  EXPECT_DOUBLE_EQ(one.stdev_s, 0);
}

// Feeds a criterion samples with a simulated clock (elapsed = sum of samples).
int samples_until_stop(StoppingCriterion& c, const std::function<double(int)>& sample,
                       int limit = 1000000) {
  double elapsed = 0;
  for (int i = 0; i < limit; ++i) {
    const double s = sample(i);
    c.add(s);
    elapsed += s;
    if (c.done(elapsed)) return i + 1;
  }
  return -1;
}

TEST(StoppingRule, QuietSamplesStopAtTheMinimumTime) {
  MeasureOptions o;  // >= 10 samples and >= 0.5 s
  auto c = noise_criterion(o);
  const int n = samples_until_stop(*c, [](int i) { return 0.01 * (1 + 1e-4 * (i % 3)); });
  EXPECT_EQ(n, 50);  // 50 x 10 ms = 0.5 s
  EXPECT_TRUE(c->noise_target_met());
  EXPECT_EQ(c->reason(), "noise target met");
}

TEST(StoppingRule, SlowSamplesStillTakeTheMinimumCount) {
  MeasureOptions o;
  auto c = noise_criterion(o);
  EXPECT_EQ(samples_until_stop(*c, [](int) { return 0.2; }), 10);
}

TEST(StoppingRule, SteadyNoiseStopsWhenItStopsImproving) {
  MeasureOptions o;
  auto c = noise_criterion(o);
  // Alternating 9 and 11 ms: 10% noise forever, never under 0.5%.
  const int n = samples_until_stop(*c, [](int i) { return i % 2 ? 0.011 : 0.009; });
  EXPECT_GE(n, 50);   // not before the minimum time
  EXPECT_LT(n, 500);  // long before the 5 s timeout (500 samples)
  EXPECT_FALSE(c->noise_target_met());
  EXPECT_EQ(c->reason(), "noise stopped improving");
}

TEST(StoppingRule, ImprovingNoiseRunsToTheTimeout) {
  MeasureOptions o;
  o.max_time_s = 2.0;
  auto c = noise_criterion(o);
  // One slow first run, then steady ones: the noise keeps falling (as 1 / sqrt(n)) but stays
  // far above 0.5%, so sampling goes on until the timeout.
  const int n = samples_until_stop(*c, [](int i) { return i == 0 ? 0.1 : 0.01; });
  EXPECT_EQ(n, 191);  // 0.1 s + 190 x 10 ms = 2 s
  EXPECT_FALSE(c->noise_target_met());
  EXPECT_EQ(c->reason(), "timeout");
}

TEST(StoppingRule, GrowingNoiseStopsEarly) {
  MeasureOptions o;
  auto c = noise_criterion(o);
  // A spread that keeps growing will not get better with more samples.
  const int n = samples_until_stop(*c, [](int i) { return 0.01 * (1 + 0.002 * i * (i % 2 ? 1 : -1)); });
  EXPECT_GE(n, 50);
  EXPECT_LT(n, 500);
  EXPECT_EQ(c->reason(), "noise stopped improving");
}

TEST(StoppingRule, FixedCountTakesExactlyN) {
  MeasureOptions o;
  o.repetitions = 7;
  auto c = make_criterion(o);
  EXPECT_EQ(samples_until_stop(*c, [](int i) { return i % 2 ? 1.0 : 3.0; }), 7);
  EXPECT_FALSE(c->noise_target_met());
}

TEST(Measure, UsesTheCriterionAndReportsWhy) {
  MeasureOptions o;
  o.repetitions = 5;
  o.warmup = 3;
  int calls = 0;
  const Timing t = measure([&] { return ++calls * 1e-3; }, o);
  EXPECT_EQ(calls, 8);  // 3 warm-up runs, untimed
  EXPECT_EQ(t.repetitions(), 5);
  EXPECT_DOUBLE_EQ(t.min_s, 4e-3);
  EXPECT_EQ(t.stop_reason, "fixed count of 5");
}

TEST(Measure, PairAlternatesAndStopsTogether) {
  MeasureOptions o;
  o.repetitions = 4;
  o.warmup = 0;
  std::string order;
  const PairTiming p = measure_pair([&] { order += 'a'; return 1.0; }, [&] { order += 'b'; return 2.0; }, o);
  EXPECT_EQ(order, "abababab");
  EXPECT_DOUBLE_EQ(p.b.median_s, 2.0);
}

TEST(MannWhitney, SeparatedSamples) {
  // scipy.stats.mannwhitneyu([1,2,3,4,5], [6,7,8,9,10], method="asymptotic"): U=0, p=0.012186
  const RankTest r = mann_whitney({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_NEAR(r.p_value, 0.0121857, 1e-6);
}

TEST(MannWhitney, TiesUseTheCorrection) {
  // scipy.stats.mannwhitneyu([1,2,2,3,3,3], [2,3,3,4,4,5], method="asymptotic"): U=7, p=0.078403
  const RankTest r = mann_whitney({1, 2, 2, 3, 3, 3}, {2, 3, 3, 4, 4, 5});
  EXPECT_DOUBLE_EQ(r.u, 7);
  EXPECT_NEAR(r.p_value, 0.0784029, 1e-6);
}

TEST(MannWhitney, IdenticalSamplesDoNotDiffer) {
  const SampleComparison c = compare_samples({1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_FALSE(c.differ);
  EXPECT_DOUBLE_EQ(c.test.p_value, 1);
  EXPECT_EQ(c.verdict(), "same within noise");
}

TEST(MannWhitney, ComparisonSaysFasterOrSlower) {
  std::vector<double> a, b;
  for (int i = 0; i < 20; ++i) {
    a.push_back(1.0 + 0.01 * (i % 7));
    b.push_back(0.8 + 0.01 * (i % 5));
  }
  const SampleComparison c = compare_samples(a, b);
  EXPECT_TRUE(c.differ);
  EXPECT_TRUE(c.enough_samples);
  EXPECT_LT(c.ratio, 1);
  EXPECT_EQ(c.verdict(), "faster");
  EXPECT_EQ(compare_samples(b, a).verdict(), "slower");
}

TEST(ColdRuns, EnoughCopiesToExceedFourCaches) {
  EXPECT_EQ(cold_copies(12.0 * (1 << 20), 32.0 * (1 << 20)), 12);  // ceil(128/12) + 1
  EXPECT_EQ(cold_copies(1e12, 32.0 * (1 << 20)), 2);
  int calls[3] = {0, 0, 0};
  auto f = rotation({[&] { ++calls[0]; }, [&] { ++calls[1]; }, [&] { ++calls[2]; }});
  for (int i = 0; i < 7; ++i) f();
  EXPECT_EQ(calls[0], 3);
  EXPECT_EQ(calls[1], 2);
  EXPECT_EQ(calls[2], 2);
}

}  // namespace
}  // namespace kforge
