// The tuner's objectives: time ranks by the median, energy by joules per run, edp by their
// product, so the three can pick three different winners; unknown names are refused.
#include <gtest/gtest.h>

#include "kforge/error.hpp"
#include "kforge/tune.hpp"

namespace kforge {
namespace {

EvalResult result(double seconds, double joules) {
  EvalResult e;
  e.disposition = Disposition::passed;
  e.timing = summarize({seconds, seconds, seconds});
  e.energy = Energy{joules, "model", "test"};
  return e;
}

std::size_t winner(const std::vector<EvalResult>& rs, const std::string& objective) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < rs.size(); ++i)
    if (*objective_value(rs[i], objective) < *objective_value(rs[best], objective)) best = i;
  return best;
}

TEST(Objective, TimeEnergyAndEdpPickTheirOwnWinners) {
  // fast and hungry; slow and frugal; in between on both (the smallest product).
  const std::vector<EvalResult> rs{result(1.0, 10.0), result(4.0, 2.0), result(2.0, 3.0)};
  EXPECT_EQ(winner(rs, "time"), 0u);
  EXPECT_EQ(winner(rs, "energy"), 1u);
  EXPECT_EQ(winner(rs, "edp"), 2u);  // 10, 8, 6
  EXPECT_DOUBLE_EQ(*objective_value(rs[2], "edp"), 6.0);
}

TEST(Objective, MissingFiguresAndUnknownNames) {
  EvalResult no_energy = result(1.0, 1.0);
  no_energy.energy.reset();
  EXPECT_TRUE(objective_value(no_energy, "time"));
  EXPECT_FALSE(objective_value(no_energy, "energy"));
  EXPECT_FALSE(objective_value(EvalResult{}, "time"));
  EXPECT_THROW(check_objective("power"), UsageError);
  EXPECT_NO_THROW(check_objective("edp"));
}

}  // namespace
}  // namespace kforge
