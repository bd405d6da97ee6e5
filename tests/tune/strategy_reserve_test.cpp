// Strategy::reserve, which distributed tuning (src/dist/) relies on: a configuration in flight
// elsewhere is never asked for, and for brute and random, asking several configurations before
// any tell (a batch over ranks) gives the very configurations that one-at-a-time ask/tell gives.
#include <gtest/gtest.h>

#include <set>

#include "kforge/strategy.hpp"
#include "tune/synthetic_space.hpp"

namespace kforge {
namespace {

Space small_space() {
  return test::synthetic_space(3, 5, [](const Config& c) { return (c[0] + c[1] + 2 * c[2]) % 3 != 1; });
}

TEST(StrategyReserve, AReservedConfigurationIsNeverAsked) {
  const Space s = small_space();
  for (const std::string name : {"brute", "random", "anneal", "genetic", "bayes"}) {
    auto st = make_strategy(name, s, 5, {.budget = static_cast<int>(s.size())});
    const Config reserved = s.at(0);  // brute's first proposal
    st->reserve(reserved);
    std::set<Config> asked;
    while (auto c = st->ask()) {
      EXPECT_NE(*c, reserved) << name;
      EXPECT_TRUE(asked.insert(*c).second) << name << ": asked twice";
      st->tell(*c, test::smooth_objective(s, *c));
    }
    EXPECT_EQ(asked.size() + 1, s.size()) << name << ": the rest of the space, exactly";
  }
}

// One rank: the default is told first, then ask/tell one at a time. Ranks: the default reserved,
// `batch` asks at once, then their tells, and so on (results arrive in another order).
std::set<Config> one_rank(const std::string& name, const Space& s, const Config& first, int n) {
  auto st = make_strategy(name, s, 11, {.budget = n});
  std::set<Config> out{first};
  st->tell(first, 1.0);
  while (static_cast<int>(out.size()) < n) {
    const auto c = st->ask();
    if (!c) break;
    out.insert(*c);
    st->tell(*c, test::smooth_objective(s, *c));
  }
  return out;
}

std::set<Config> batched(const std::string& name, const Space& s, const Config& first, int n, int batch) {
  auto st = make_strategy(name, s, 11, {.budget = n});
  st->reserve(first);
  std::set<Config> out{first};
  std::vector<Config> pending;
  while (static_cast<int>(out.size()) < n) {
    for (int i = 0; i < batch && static_cast<int>(out.size()) < n; ++i) {
      const auto c = st->ask();
      if (!c) break;
      out.insert(*c);
      pending.push_back(*c);
    }
    for (auto it = pending.rbegin(); it != pending.rend(); ++it) st->tell(*it, test::smooth_objective(s, *it));
    pending.clear();
  }
  st->tell(first, 1.0);
  return out;
}

TEST(StrategyReserve, BruteAndRandomBatchesEvaluateTheOneRankSet) {
  const Space s = small_space();
  for (const std::string name : {"brute", "random"})
    for (const Config& first : {s.at(0), s.at(s.size() / 2)})
      for (int batch : {2, 3, 7}) {
        const int n = static_cast<int>(s.size()) / 3;
        EXPECT_EQ(batched(name, s, first, n, batch), one_rank(name, s, first, n)) << name << " batch " << batch;
      }
}

}  // namespace
}  // namespace kforge
