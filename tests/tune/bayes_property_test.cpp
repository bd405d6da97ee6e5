// A property that can fail: on a smooth space, Bayesian optimization finds better
// configurations than random sampling with the same small budget, in median over seeds.
#include <gtest/gtest.h>

#include <algorithm>

#include "kforge/search.hpp"
#include "tune/synthetic_space.hpp"

namespace kforge {
namespace {

double median_best(const std::string& strategy, const Space& s, int budget, int seeds) {
  std::vector<double> best;
  for (int seed = 1; seed <= seeds; ++seed) {
    auto st = make_strategy(strategy, s, seed, {.budget = budget});
    const SearchTrace t = run_search(*st, [&](const Config& c) { return Outcome{test::smooth_objective(s, c), 1}; },
                                     {.evaluations = budget});
    best.push_back(*t.steps[t.best].objective);
  }
  std::sort(best.begin(), best.end());
  return best[best.size() / 2];
}

TEST(BayesProperty, BeatsRandomOnASmoothSpace) {
  // 4 parameters of 8 values, a tenth of the product removed.
  const Space s = test::synthetic_space(4, 8, [](const Config& c) { return (c[0] * 3 + c[1] + c[2] * 5 + c[3]) % 10 != 0; });
  double opt = 1e300;
  for (std::uint64_t r = 0; r < s.size(); ++r) opt = std::min(opt, test::smooth_objective(s, s.at(r)));
  const double bayes = median_best("bayes", s, 30, 15), random = median_best("random", s, 30, 15);
  RecordProperty("bayes_over_optimum", std::to_string(bayes / opt));
  RecordProperty("random_over_optimum", std::to_string(random / opt));
  EXPECT_LT(bayes - opt, 0.5 * (random - opt)) << "bayes " << bayes / opt << "x, random " << random / opt
                                               << "x the optimum";
}

}  // namespace
}  // namespace kforge
