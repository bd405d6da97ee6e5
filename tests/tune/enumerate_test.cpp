// The grouped backtracking enumerator against brute force over the Cartesian product: the same
// valid set on a toy space and on the library's GEMM spaces, exact rank <-> configuration,
// valid neighbours, uniform-looking samples, errors naming the bad constraint.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/space.hpp"

namespace kforge {
namespace {

KernelSpec spec(const char* text) { return KernelSpec::from_json_with_source(nlohmann::json::parse(text), ""); }

KernelSpec toy() {
  return spec(R"J({"name": "toy", "problem": "gemm",
    "params": {"A": [1, 2, 3, 4, 6], "B": [8, 16, 32], "S": [0, 1], "V": [1, 4], "U": [1, 2, 3]},
    "constraints": ["A * B <= 64", "S == 0 or B >= 16", "M % A == 0 or S == 1", "B % (V * 2) == 0 and V <= A"]})J");
}

// Every combination of the product that KernelSpec::check accepts, as a set.
std::set<ParamValues> brute_force(const KernelSpec& k, const Sizes& s) {
  std::vector<ParamValues> all{{}};
  for (const Param& prm : k.params) {
    std::vector<ParamValues> next;
    for (const auto& partial : all)
      for (std::int64_t v : prm.values) {
        ParamValues p = partial;
        p[prm.name] = v;
        next.push_back(p);
      }
    all = std::move(next);
  }
  std::set<ParamValues> valid;
  for (const auto& p : all)
    if (!k.check(p, s)) valid.insert(p);
  return valid;
}

void expect_same_as_brute_force(const KernelSpec& k, const Sizes& s) {
  const Space sp = Space::from_kernel(k, s);
  const auto want = brute_force(k, s);
  ASSERT_EQ(sp.size(), want.size()) << k.name;
  EXPECT_EQ(sp.product(), k.space_size());
  std::set<ParamValues> got;
  for (std::uint64_t r = 0; r < sp.size(); ++r) {
    const Config c = sp.at(r);
    ASSERT_EQ(sp.rank(c), r) << "rank and at() disagree at " << r;
    got.insert(sp.values(c));
  }
  EXPECT_EQ(got, want) << k.name;
}

TEST(Enumerate, ToySpaceEqualsBruteForce) {
  for (std::int64_t m : {1, 9, 12}) expect_same_as_brute_force(toy(), {{"M", m}, {"N", 1}, {"K", 1}});
  const Space sp = Space::from_kernel(toy(), {{"M", 9}});
  EXPECT_EQ(sp.groups(), 2u) << "U is constrained by nothing: its own group";
}

TEST(Enumerate, LibraryGemmSpacesEqualBruteForce) {
  const auto gemm = find_problem("gemm");
  for (Lang l : {Lang::cpp, Lang::opencl})
    expect_same_as_brute_force(library_kernel(*gemm, l), gemm->resolve_sizes({}));
}

TEST(Enumerate, ContainsMatchesCheck) {
  const KernelSpec k = toy();
  const Sizes s{{"M", 9}};
  const Space sp = Space::from_kernel(k, s);
  // Every configuration of the product: contains() agrees with check().
  Config c(k.params.size(), 0);
  for (;;) {
    const ParamValues p = sp.values(c);
    EXPECT_EQ(sp.contains(c), !k.check(p, s).has_value()) << sp.label(c);
    std::size_t d = c.size();
    while (d > 0 && ++c[d - 1] == static_cast<int>(k.params[d - 1].values.size())) c[--d] = 0;
    if (d == 0) break;
  }
}

TEST(Enumerate, NeighboursAreValidAndOneParameterAway) {
  const Space sp = Space::from_kernel(toy(), {{"M", 12}});
  for (std::uint64_t r = 0; r < sp.size(); ++r) {
    const Config c = sp.at(r);
    for (auto n : {Neighbourhood::adjacent, Neighbourhood::hamming})
      for (const Config& x : sp.neighbours(c, n)) {
        EXPECT_TRUE(sp.contains(x));
        int changed = 0;
        for (std::size_t d = 0; d < c.size(); ++d)
          if (x[d] != c[d]) {
            ++changed;
            if (n == Neighbourhood::adjacent) EXPECT_EQ(std::abs(x[d] - c[d]), 1);
          }
        EXPECT_EQ(changed, 1);
      }
  }
}

TEST(Enumerate, SamplesAreValidAndCoverTheSpace) {
  const Space sp = Space::from_kernel(toy(), {{"M", 12}});
  SearchRng rng(5);
  std::map<std::uint64_t, int> hits;
  const int draws = static_cast<int>(sp.size()) * 200;
  for (int i = 0; i < draws; ++i) {
    const Config c = sp.sample(rng);
    ASSERT_TRUE(sp.contains(c));
    ++hits[*sp.rank(c)];
  }
  EXPECT_EQ(hits.size(), sp.size());
  for (const auto& [r, n] : hits) EXPECT_NEAR(n, 200, 80) << "rank " << r;
}

TEST(Enumerate, SizesOnlyConstraintAndErrors) {
  const KernelSpec k = spec(R"J({"name": "k", "params": {"A": [1, 2]}, "constraints": ["M >= 10"]})J");
  EXPECT_EQ(Space::from_kernel(k, {{"M", 12}}).size(), 2u);
  EXPECT_EQ(Space::from_kernel(k, {{"M", 3}}).size(), 0u);
  const KernelSpec bad = spec(R"J({"name": "bad", "params": {"A": [1, 2]}, "constraints": ["A <= Q"]})J");
  try {
    (void)Space::from_kernel(bad, {{"M", 1}});
    FAIL() << "accepted an unknown name";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'Q'"), std::string::npos) << e.what();
  }
  const KernelSpec none = spec(R"J({"name": "none"})J");
  const Space sp = Space::from_kernel(none, {});
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_TRUE(sp.at(0).empty());
}

TEST(Enumerate, HugeProductIsNotMaterialized) {
  // 18 parameters of 10 values: 10^18 configurations; the constrained pair has 55 valid.
  nlohmann::json j{{"name", "huge"}, {"params", nlohmann::json::object()}, {"constraints", nlohmann::json::array()}};
  for (int i = 0; i < 18; ++i) j["params"]["P" + std::to_string(i)] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  j["constraints"].push_back("P0 + P1 <= 9");
  const Space sp = Space::from_kernel(KernelSpec::from_json_with_source(j, ""), {});
  EXPECT_EQ(sp.groups(), 17u);
  EXPECT_EQ(sp.size(), 55ull * 10000000000000000ull);
  SearchRng rng(1);
  const Config c = sp.sample(rng);
  EXPECT_EQ(sp.at(*sp.rank(c)), c);
}

}  // namespace
}  // namespace kforge
