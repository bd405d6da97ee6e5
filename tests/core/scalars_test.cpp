// Scalars a user fixes (`--scalar NAME=V`): checked against the problem before anything runs,
// then used by every verification trial and by the timed runs.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"

namespace kforge {
namespace {

TEST(Scalars, AFixedValueHoldsInEveryTrialAndTheOthersStillVary) {
  const auto gemm = find_problem("gemm");
  const Sizes s = gemm->resolve_sizes({{"M", 3}, {"N", 5}, {"K", 7}});
  std::set<double> betas;
  for (int trial = 0; trial < 3; ++trial) {
    const Instance inst = gemm->make_instance(s, DType::fp32, Distribution::normal, 42, trial, {{"alpha", 2.5}});
    EXPECT_EQ(inst.scalars.at("alpha"), 2.5) << "trial " << trial;
    betas.insert(inst.scalars.at("beta"));
  }
  EXPECT_GT(betas.size(), 1u) << "the scalars the user did not fix keep each trial's values";
}

TEST(Scalars, ResolveRefusesAnUnknownNameAndNamesTheKnownOnes) {
  const auto gemm = find_problem("gemm");
  try {
    (void)gemm->resolve_scalars({{"gamma", 0.5}});
    FAIL() << "gamma is not a scalar of gemm";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("gamma"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("alpha"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gemm->resolve_scalars({{"beta", 0.0}}).at("beta"), 0.0);
}

TEST(Scalars, ResolveRefusesANonFiniteValue) {
  const auto gemm = find_problem("gemm");
  EXPECT_THROW((void)gemm->resolve_scalars({{"alpha", INFINITY}}), UsageError);
  EXPECT_THROW((void)gemm->resolve_scalars({{"beta", NAN}}), UsageError);
}

TEST(Scalars, RealAssignmentsParseAndNameTheBadItem) {
  const auto v = parse_real_assignments("gamma=0.99, lambda=-1e-3");
  EXPECT_DOUBLE_EQ(v.at("gamma"), 0.99);
  EXPECT_DOUBLE_EQ(v.at("lambda"), -1e-3);
  try {
    (void)parse_real_assignments("gamma=0.9x");
    FAIL() << "0.9x is not a number";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("gamma=0.9x"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge
