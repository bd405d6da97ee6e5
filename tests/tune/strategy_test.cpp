// Every strategy's invariants: it never proposes an invalid or already-tried configuration,
// exhausts a small space exactly, gives the same sequence for the same seed, survives
// failures, and the search loop honours each kind of budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kforge/error.hpp"
#include "kforge/search.hpp"
#include "kforge/strategy.hpp"
#include "tune/synthetic_space.hpp"

namespace kforge {
namespace {

using test::smooth_objective;
using test::synthetic_space;

// 4 parameters of 6 values, about half of them valid.
Space holey_space() {
  return synthetic_space(4, 6, [](const Config& c) { return (c[0] + 2 * c[1] + c[2] * c[3]) % 3 != 0; });
}

// 5 parameters of 8 values, the members one coupled group (about 16000 of 32768).
Space wide_space() {
  return synthetic_space(5, 8, [](const Config& c) { return (c[0] + c[1] * c[2] + c[3] + 3 * c[4]) % 2 == 0; });
}

// How many configurations two runs have in common.
int shared(const std::vector<Config>& a, const std::vector<Config>& b) {
  const std::set<Config> in_a(a.begin(), a.end());
  return static_cast<int>(std::count_if(b.begin(), b.end(), [&](const Config& c) { return in_a.count(c) > 0; }));
}

// Fails on a fifth of the space, deterministically.
Outcome objective(const Space& s, const Config& c) {
  if ((c[0] * 7 + c[1] * 3 + c[3]) % 5 == 0) return {std::nullopt, 0.5};
  return {smooth_objective(s, c), 1.0};
}

std::vector<Config> sequence(const std::string& name, const Space& s, std::uint64_t seed, int n) {
  auto st = make_strategy(name, s, seed, {.budget = n});
  std::vector<Config> out;
  for (int i = 0; i < n; ++i) {
    auto c = st->ask();
    if (!c) break;
    out.push_back(*c);
    st->tell(*c, objective(s, *c).objective);
  }
  return out;
}

class EachStrategy : public testing::TestWithParam<std::string> {};

TEST_P(EachStrategy, NeverInvalidNeverRepeatedAndExhaustsTheSpace) {
  const Space s = synthetic_space(4, 4, [](const Config& c) { return (c[0] + 2 * c[1] + c[2] * c[3]) % 3 != 0; });
  ASSERT_GT(s.size(), 100u);
  ASSERT_LT(s.size(), s.product());
  const auto seq = sequence(GetParam(), s, 3, static_cast<int>(s.size()) + 5);
  EXPECT_EQ(seq.size(), s.size()) << "should try every configuration, then stop";
  std::set<Config> seen;
  for (const Config& c : seq) {
    EXPECT_TRUE(s.contains(c)) << s.label(c);
    EXPECT_TRUE(seen.insert(c).second) << "repeated " << s.label(c);
  }
}

TEST_P(EachStrategy, SameSeedSameSequence) {
  const Space s = holey_space();
  const auto a = sequence(GetParam(), s, 11, 60), b = sequence(GetParam(), s, 11, 60);
  EXPECT_EQ(a, b);
  if (GetParam() != "brute") EXPECT_NE(a, sequence(GetParam(), s, 12, 60)) << "another seed, another search";
}

TEST_P(EachStrategy, BudgetsAreHonoured) {
  const Space s = holey_space();
  const Objective f = [&](const Config& c) { return objective(s, c); };
  {
    auto st = make_strategy(GetParam(), s, 1);
    const SearchTrace t = run_search(*st, f, {.evaluations = 37});
    EXPECT_EQ(t.steps.size(), 37u);
    EXPECT_EQ(t.stopped, "budget");
  }
  {
    auto st = make_strategy(GetParam(), s, 1);
    const SearchTrace t = run_search(*st, f, {.evaluations = 1000, .seconds = 10.0});
    EXPECT_GE(t.spent_s, 10.0);
    EXPECT_LT(t.spent_s - t.steps.back().cost_s, 10.0) << "ran on past the time limit";
    EXPECT_EQ(t.stopped, "time");
  }
  {
    // The optimum of the valid, non-failing configurations, as a target.
    double opt = 1e300;
    for (std::uint64_t r = 0; r < s.size(); ++r)
      if (auto o = objective(s, s.at(r)).objective) opt = std::min(opt, *o);
    auto st = make_strategy(GetParam(), s, 1);
    const SearchTrace t = run_search(*st, f, {.evaluations = 100000, .optimum = opt, .within = 0.05});
    EXPECT_EQ(t.stopped, "target");
    ASSERT_GE(t.best, 0);
    EXPECT_LE(*t.steps[t.best].objective, opt * 1.05);
    EXPECT_EQ(t.steps_to_within(opt, 0.05), static_cast<int>(t.steps.size()));
  }
  {
    // The stop hook (a cancelled tuning run) is asked before each evaluation.
    auto st = make_strategy(GetParam(), s, 1);
    int calls = 0;
    Budget b{.evaluations = 1000};
    b.stop = [&] { return calls >= 5; };
    const SearchTrace t = run_search(*st, [&](const Config& c) { ++calls; return objective(s, c); }, b);
    EXPECT_EQ(t.steps.size(), 5u);
    EXPECT_EQ(t.stopped, "cancelled");
  }
}

TEST_P(EachStrategy, FirstConfigurationsComeFirstAndAreNotRepeated) {
  const Space s = holey_space();
  const Config first = s.at(s.size() / 2);
  auto st = make_strategy(GetParam(), s, 4);
  const SearchTrace t = run_search(*st, [&](const Config& c) { return objective(s, c); }, {.evaluations = 50}, {first});
  ASSERT_EQ(t.steps.size(), 50u);
  EXPECT_EQ(t.steps[0].config, first);
  for (std::size_t i = 1; i < t.steps.size(); ++i) EXPECT_NE(t.steps[i].config, first);
}

TEST_P(EachStrategy, FindsBetterThanTheMedianOnASmoothSpace) {
  const Space s = synthetic_space(3, 10, [](const Config&) { return true; });
  auto st = make_strategy(GetParam(), s, 2, {.budget = 60});
  const SearchTrace t = run_search(*st, [&](const Config& c) { return Outcome{smooth_objective(s, c), 1}; },
                                   {.evaluations = 60});
  std::vector<double> all;
  for (std::uint64_t r = 0; r < s.size(); ++r) all.push_back(smooth_objective(s, s.at(r)));
  std::sort(all.begin(), all.end());
  ASSERT_GE(t.best, 0);
  if (GetParam() != "brute") EXPECT_LT(*t.steps[t.best].objective, all[all.size() / 10]) << "not in the best tenth";
}

// Runs over seeds 1..N are meant to be N independent samples (bench/strategies takes medians
// over them). Two consecutive seeds must therefore start from unrelated proposals: in a space of
// about 16000 configurations, two independent first-10 lists share a configuration with
// probability about 0.006. (When the generator's state was an affine function of the seed, seed
// k+1 replayed seed k one draw on, and genetic and mapelites began from nearly one population.)
TEST_P(EachStrategy, ConsecutiveSeedsStartFromUnrelatedConfigurations) {
  if (GetParam() == "brute") GTEST_SKIP() << "brute force ignores its seed";
  const Space s = wide_space();
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto a = sequence(GetParam(), s, seed, 10), b = sequence(GetParam(), s, seed + 1, 10);
    EXPECT_LE(shared(a, b), 2) << "seeds " << seed << " and " << seed + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(All, EachStrategy, testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

// Random search's whole run, not only its start: 200 proposals each from two seeds in about
// 16000 configurations share 2.4 by chance (at most 20 with probability above 1 - 1e-11).
TEST(Strategy, ConsecutiveSeedsOfRandomSearchOverlapOnlyByChance) {
  const Space s = wide_space();
  ASSERT_GT(s.size(), 15000u);
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto a = sequence("random", s, seed, 200), b = sequence("random", s, seed + 1, 200);
    ASSERT_EQ(a.size(), 200u);
    EXPECT_LE(shared(a, b), 20) << "seeds " << seed << " and " << seed + 1;
  }
}

TEST(SearchRng, ConsecutiveSeedsShareNoDraws) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    SearchRng rng(seed);
    for (int i = 0; i < 1000; ++i) seen.insert(rng.next());
  }
  EXPECT_EQ(seen.size(), 8000u) << "one seed's stream repeats another's";
}

TEST(Strategy, UnknownNamesAreUsageErrors) {
  const Space s = holey_space();
  EXPECT_THROW((void)make_strategy("tabu", s, 1), UsageError);
  EXPECT_THROW((void)make_strategy("mapelites", s, 1, {.descriptors = {"P0", "nope"}}), UsageError);
  EXPECT_THROW((void)make_strategy("bayes", s, 1, {.acquisition = "ucb2"}), UsageError);
}

TEST(Strategy, MapElitesReportsItsArchive) {
  const Space s = holey_space();
  auto st = make_strategy("mapelites", s, 1, {.budget = 80, .descriptors = {"P1", "P2"}});
  (void)run_search(*st, [&](const Config& c) { return objective(s, c); }, {.evaluations = 80});
  const auto r = st->report();
  EXPECT_EQ(r["descriptors"], nlohmann::json({"P1", "P2"}));
  ASSERT_GT(r["cells"].size(), 10u);
  // Each cell holds the best seen with its descriptor values.
  for (const auto& cell : r["cells"]) {
    double best = 1e300;
    for (const auto& o : st->history())
      if (o.objective && s.params()[1].labels[o.config[1]] == cell["P1"] &&
          s.params()[2].labels[o.config[2]] == cell["P2"])
        best = std::min(best, *o.objective);
    EXPECT_DOUBLE_EQ(cell["objective"].get<double>(), best);
  }
}

TEST(Strategy, EachAcquisitionWorksAlone) {
  const Space s = holey_space();
  for (const char* a : {"ei", "pi", "lcb", "portfolio"}) {
    auto st = make_strategy("bayes", s, 1, {.budget = 40, .acquisition = a});
    const SearchTrace t = run_search(*st, [&](const Config& c) { return objective(s, c); }, {.evaluations = 40});
    EXPECT_EQ(t.steps.size(), 40u) << a;
    EXPECT_EQ(st->replaced(), 0) << a << ": the model proposed something invalid or tried";
  }
}

}  // namespace
}  // namespace kforge
