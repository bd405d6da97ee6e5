// The input generator: a pure function of (seed, stream, index), with distributions whose
// basic statistics are what their names promise, and never an all-zero fill.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "kforge/error.hpp"
#include "kforge/rng.hpp"

namespace kforge {
namespace {

std::vector<double> fill(Distribution d, std::size_t n, std::uint64_t seed, std::uint64_t stream) {
  std::vector<double> v(n);
  fill_random(v, d, seed, stream);
  return v;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double variance(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

TEST(Rng, SameSeedStreamAndIndexGiveSameValues) {
  for (Distribution d : kAllDistributions) {
    EXPECT_EQ(fill(d, 1000, 42, 3), fill(d, 1000, 42, 3)) << distribution_name(d);
    // Value i depends only on i, not on how many values are drawn.
    const auto short_fill = fill(d, 37, 42, 3), long_fill = fill(d, 1000, 42, 3);
    EXPECT_TRUE(std::equal(short_fill.begin(), short_fill.end(), long_fill.begin()))
        << distribution_name(d);
  }
  EXPECT_EQ(random_bits(1, 2, 3), random_bits(1, 2, 3));
  EXPECT_EQ(random_unit(1, 2, 3), random_unit(1, 2, 3));
}

// A long fill is split among the cores; each value must still be a function of its index alone.
TEST(Rng, LongFillsDrawEachValueFromItsIndexAlone) {
  for (Distribution d : kAllDistributions) {
    std::vector<double> long_fill(400003), short_fill(1000);
    fill_random(long_fill, d, 5, 2);
    fill_random(short_fill, d, 5, 2);
    EXPECT_TRUE(std::equal(short_fill.begin(), short_fill.end(), long_fill.begin())) << distribution_name(d);
  }
  std::vector<double> uniform(400003);
  fill_random(uniform, Distribution::uniform, 5, 2);
  for (std::size_t i = 0; i < uniform.size(); ++i)
    ASSERT_EQ(uniform[i], 2.0 * random_unit(5, 2, i) - 1.0) << "index " << i;
}

TEST(Rng, DifferentStreamsSeedsAndIndicesDiffer) {
  for (Distribution d : {Distribution::normal, Distribution::uniform, Distribution::wide}) {
    const auto a = fill(d, 256, 42, 0), b = fill(d, 256, 42, 1), c = fill(d, 256, 43, 0);
    int same_ab = 0, same_ac = 0;
    for (int i = 0; i < 256; ++i) {
      same_ab += a[i] == b[i];
      same_ac += a[i] == c[i];
    }
    EXPECT_EQ(same_ab, 0) << distribution_name(d);
    EXPECT_EQ(same_ac, 0) << distribution_name(d);
  }
  std::set<std::uint64_t> seen;
  for (std::uint64_t s = 0; s < 64; ++s)
    for (std::uint64_t i = 0; i < 64; ++i) seen.insert(random_bits(5, s, i));
  EXPECT_EQ(seen.size(), 64u * 64u) << "collisions among 4096 draws of 64 bits";
}

// Not merely different at each index: seed k+1 must not be seed k's stream shifted by a few
// draws (the strategies' generator once was), or every "independent" fill would repeat values.
TEST(Rng, ConsecutiveSeedsAreNotShiftedCopies) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t seed = 1; seed <= 8; ++seed)
    for (std::uint64_t i = 0; i < 4096; ++i) seen.insert(random_bits(seed, 0, i));
  EXPECT_EQ(seen.size(), 8u * 4096u) << "two seeds' streams share values";
}

TEST(Rng, RandomUnitIsInHalfOpenUnitInterval) {
  double lo = 1, hi = 0, sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = random_unit(3, 1, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
  }
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1 - 1e-3);
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(Rng, NormalHasMeanZeroVarianceOne) {
  const auto v = fill(Distribution::normal, 200000, 7, 1);
  EXPECT_NEAR(mean(v), 0.0, 0.012);      // ~5 standard errors
  EXPECT_NEAR(variance(v), 1.0, 0.016);  // ~5 standard errors
  const auto within1 = std::count_if(v.begin(), v.end(), [](double x) { return std::fabs(x) < 1; });
  EXPECT_NEAR(static_cast<double>(within1) / v.size(), 0.6827, 0.006);
  const auto beyond3 = std::count_if(v.begin(), v.end(), [](double x) { return std::fabs(x) > 3; });
  EXPECT_NEAR(static_cast<double>(beyond3) / v.size(), 0.0027, 0.0012);
  for (double x : v) ASSERT_TRUE(std::isfinite(x));
}

TEST(Rng, UniformStaysWithinMinusOneToOne) {
  const auto v = fill(Distribution::uniform, 100000, 7, 2);
  for (double x : v) {
    ASSERT_GE(x, -1.0);
    ASSERT_LE(x, 1.0);
  }
  EXPECT_NEAR(mean(v), 0.0, 0.01);
  EXPECT_NEAR(variance(v), 1.0 / 3.0, 0.01);
  EXPECT_LT(*std::min_element(v.begin(), v.end()), -0.999);
  EXPECT_GT(*std::max_element(v.begin(), v.end()), 0.999);
}

TEST(Rng, SparseHasZerosAndNormalNonzeros) {
  const auto v = fill(Distribution::sparse, 100000, 7, 3);
  std::vector<double> nz;
  for (double x : v)
    if (x != 0.0) nz.push_back(x);
  const double zero_share = 1.0 - static_cast<double>(nz.size()) / v.size();
  EXPECT_GT(zero_share, 0.5);
  EXPECT_LT(zero_share, 0.7);
  ASSERT_GT(nz.size(), 1000u);
  EXPECT_NEAR(mean(nz), 0.0, 0.03);
  EXPECT_NEAR(variance(nz), 1.0, 0.05);
}

TEST(Rng, IntegersAreSmallAndCoverTheRange) {
  const auto v = fill(Distribution::integers, 34000, 7, 4);
  std::map<int, int> counts;
  for (double x : v) {
    ASSERT_EQ(x, std::round(x));
    ASSERT_GE(x, -8.0);
    ASSERT_LE(x, 8.0);
    ++counts[static_cast<int>(x)];
  }
  EXPECT_EQ(counts.size(), 17u);  // every integer in [-8, 8] occurs
  for (const auto& [k, c] : counts) EXPECT_NEAR(c, 2000, 300) << "value " << k;
}

TEST(Rng, WideSpansManyDecades) {
  const auto v = fill(Distribution::wide, 100000, 7, 5);
  std::set<int> decades;
  int negative = 0;
  double log_sum = 0;
  for (double x : v) {
    ASSERT_NE(x, 0.0);
    ASSERT_GE(std::fabs(x), std::ldexp(1.0, -20));
    ASSERT_LE(std::fabs(x), std::ldexp(1.0, 20));
    decades.insert(static_cast<int>(std::floor(std::log10(std::fabs(x)))));
    negative += x < 0;
    log_sum += std::log2(std::fabs(x));
  }
  EXPECT_GE(decades.size(), 12u);  // 2^-20..2^20 is about 12 decades
  EXPECT_NEAR(static_cast<double>(negative) / v.size(), 0.5, 0.01);
  EXPECT_NEAR(log_sum / v.size(), 0.0, 0.3);  // log-uniform: centred on 2^0
}

TEST(Rng, NeverAllZeros) {
  for (Distribution d : kAllDistributions) {
    for (std::size_t n : {1u, 2u, 3u, 5u}) {
      for (std::uint64_t seed = 0; seed < 300; ++seed) {
        const auto v = fill(d, n, seed, 0);
        ASSERT_TRUE(std::any_of(v.begin(), v.end(), [](double x) { return x != 0.0; }))
            << distribution_name(d) << " n=" << n << " seed=" << seed;
      }
    }
  }
  std::vector<double> empty;
  fill_random(empty, Distribution::sparse, 1, 1);  // must not touch anything
}

TEST(Rng, DistributionNamesParse) {
  for (Distribution d : kAllDistributions) EXPECT_EQ(parse_distribution(distribution_name(d)), d);
  try {
    (void)parse_distribution("gaussian");
    FAIL() << "accepted an unknown distribution";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("gaussian"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge
