// Parameter spaces: enumeration equals brute-force filtering, sampling is seeded and valid,
// and refusals say which constraint failed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/tune.hpp"

namespace kforge {
namespace {

KernelSpec toy_spec() {
  const auto j = nlohmann::json::parse(R"J({
    "name": "toy", "problem": "gemm", "lang": "cpp", "entry": "gemm",
    "params": {"TA": [1, 2, 3, 4, 6], "TB": [8, 16, 32], "SPLIT": [0, 1], "V": [1, 4]},
    "defaults": {"TA": 2, "TB": 16, "SPLIT": 0, "V": 1},
    "constraints": ["TA * TB <= 64", "SPLIT == 0 or TB >= 16", "M % TA == 0 or SPLIT == 1",
                    "TB % (V * 2) == 0 and V <= TA"],
    "grid": ["ceil_div(N, TB)", "ceil_div(M, TA)"]
  })J");
  return KernelSpec::from_json_with_source(j, "// no source needed");
}

// The same constraints written in C++, independently of the expression evaluator.
bool toy_valid(const ParamValues& p, const Sizes& s) {
  const auto TA = p.at("TA"), TB = p.at("TB"), SPLIT = p.at("SPLIT"), V = p.at("V");
  return TA * TB <= 64 && (SPLIT == 0 || TB >= 16) && (s.at("M") % TA == 0 || SPLIT == 1) &&
         (TB % (V * 2) == 0 && V <= TA);
}

// Every combination in odometer order (first parameter slowest), filtered by `toy_valid`.
std::vector<ParamValues> brute_force(const KernelSpec& k, const Sizes& s) {
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
  std::vector<ParamValues> valid;
  for (const auto& p : all)
    if (toy_valid(p, s)) valid.push_back(p);
  return valid;
}

const Sizes kSizes{{"M", 9}, {"N", 100}, {"K", 7}};

TEST(Space, ValidConfigsEqualsBruteForce) {
  const KernelSpec k = toy_spec();
  EXPECT_EQ(k.space_size(), 5u * 3u * 2u * 2u);
  for (const Sizes& s : {kSizes, Sizes{{"M", 12}, {"N", 1}, {"K", 1}}, Sizes{{"M", 1}, {"N", 1}, {"K", 1}}}) {
    const auto want = brute_force(k, s);
    const auto got = valid_configs(k, s);
    ASSERT_FALSE(want.empty());
    ASSERT_LT(want.size(), k.space_size()) << "the constraints should remove something";
    EXPECT_EQ(got, want) << "M=" << s.at("M");
  }
}

TEST(Space, ValidConfigsHonoursTheLimit) {
  const KernelSpec k = toy_spec();
  const auto all = valid_configs(k, kSizes);
  ASSERT_GT(all.size(), 3u);
  const auto first3 = valid_configs(k, kSizes, 3);
  EXPECT_EQ(first3, std::vector<ParamValues>(all.begin(), all.begin() + 3));
}

TEST(Space, EmptySpaceHasOneConfiguration) {
  const KernelSpec k = KernelSpec::from_json_with_source(
      nlohmann::json{{"name", "plain"}, {"problem", "gemm"}}, "");
  EXPECT_EQ(k.space_size(), 1u);
  const auto c = valid_configs(k, kSizes);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].empty());
}

TEST(Space, SampleConfigsIsSeededDistinctAndValid) {
  const KernelSpec k = toy_spec();
  const auto all = valid_configs(k, kSizes);
  const std::set<ParamValues> valid(all.begin(), all.end());
  const std::size_t count = all.size() / 2;
  const auto a = sample_configs(k, kSizes, count, 17);
  const auto b = sample_configs(k, kSizes, count, 17);
  const auto c = sample_configs(k, kSizes, count, 18);
  EXPECT_EQ(a, b) << "same seed, same draws";
  EXPECT_NE(a, c) << "another seed should draw otherwise";
  ASSERT_EQ(a.size(), count);
  EXPECT_EQ(std::set<ParamValues>(a.begin(), a.end()).size(), a.size()) << "draws repeat";
  for (const auto& p : a) {
    EXPECT_TRUE(valid.count(p)) << "drew an invalid configuration";
    EXPECT_FALSE(k.check(p, kSizes).has_value());
  }
  // Asking for more than exist gives every valid configuration exactly once.
  const auto everything = sample_configs(k, kSizes, all.size() + 10, 3);
  EXPECT_EQ(std::set<ParamValues>(everything.begin(), everything.end()), valid);
  EXPECT_EQ(everything.size(), valid.size());
}

TEST(Space, CheckNamesTheFailingConstraint) {
  const KernelSpec k = toy_spec();
  auto why = k.check({{"TA", 4}, {"TB", 32}, {"SPLIT", 1}, {"V", 1}}, kSizes);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("TA * TB <= 64"), std::string::npos) << *why;

  why = k.check({{"TA", 2}, {"TB", 16}, {"SPLIT", 0}, {"V", 1}}, kSizes);  // 9 % 2 != 0
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("M % TA == 0 or SPLIT == 1"), std::string::npos) << *why;

  why = k.check({{"TA", 5}, {"TB", 8}, {"SPLIT", 1}, {"V", 1}}, kSizes);  // 5 is not a value
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("TA"), std::string::npos) << *why;
  EXPECT_NE(why->find("5"), std::string::npos) << *why;

  why = k.check({{"TA", 3}, {"TB", 16}, {"SPLIT", 0}}, kSizes);  // V missing
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("V"), std::string::npos) << *why;

  EXPECT_FALSE(k.check({{"TA", 3}, {"TB", 16}, {"SPLIT", 0}, {"V", 1}}, kSizes).has_value());
}

TEST(Space, ResolveOverridesDefaultsAndRejectsUnknownNames) {
  const KernelSpec k = toy_spec();
  const ParamValues p = k.resolve({{"TA", 3}});
  EXPECT_EQ(p, (ParamValues{{"TA", 3}, {"TB", 16}, {"SPLIT", 0}, {"V", 1}}));
  EXPECT_EQ(k.resolve({}), k.defaults);
  try {
    (void)k.resolve({{"TX", 3}});
    FAIL() << "accepted an unknown parameter";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("TX"), std::string::npos) << msg;
    EXPECT_NE(msg.find("TA"), std::string::npos) << "should list the known ones: " << msg;
  }
}

TEST(Space, GeometryFollowsSizesAndParams) {
  const KernelSpec k = toy_spec();
  const auto g = k.geometry({{"TA", 2}, {"TB", 16}, {"SPLIT", 0}, {"V", 1}},
                            {{"M", 9}, {"N", 100}, {"K", 7}});
  EXPECT_EQ(g.grid.x, 7);  // ceil(100 / 16)
  EXPECT_EQ(g.grid.y, 5);  // ceil(9 / 2)
  EXPECT_EQ(g.grid.z, 1);
  EXPECT_EQ(g.block.x, 1);
}

TEST(Space, MalformedSpecsAreUsageErrors) {
  const auto bad = [](const char* text) {
    return KernelSpec::from_json_with_source(nlohmann::json::parse(text), "");
  };
  EXPECT_THROW(bad(R"({"params": {"A": []}})"), UsageError);
  EXPECT_THROW(bad(R"({"params": {"A": ["x"]}})"), UsageError);
  EXPECT_THROW(bad(R"({"constraints": ["A +"]})"), UsageError);
  EXPECT_THROW(bad(R"({"lang": "fortran"})"), UsageError);
  EXPECT_THROW(bad(R"({"dtypes": ["fp8"]})"), UsageError);
  EXPECT_THROW(bad(R"({"grid": []})"), UsageError);
}

class GemmCpuKernel : public ::testing::Test {
 protected:
  std::shared_ptr<Problem> problem = find_problem("gemm");
  KernelSpec kernel = library_kernel(*problem, Lang::cpp);
};

TEST_F(GemmCpuKernel, DefaultsAreValidAtSmallAndOddSizes) {
  const ParamValues defaults = kernel.resolve({});
  EXPECT_EQ(defaults.size(), kernel.params.size());
  for (const Sizes& s : {Sizes{{"M", 1}, {"N", 1}, {"K", 1}}, Sizes{{"M", 1000}, {"N", 1000}, {"K", 999}}}) {
    const auto why = kernel.check(defaults, s);
    EXPECT_FALSE(why.has_value()) << *why;
    // The grid covers the output. Along N no block is idle; along M the grid is an upper bound
    // (the kernel hands whole runs of rows to as few rows of blocks as keep the threads busy,
    // the rest return at once), never more than 8 rows of blocks beyond ceil(M / MC).
    const auto g = kernel.geometry(defaults, s);
    const std::int64_t NC = defaults.at("NC"), MC = defaults.at("MC");
    EXPECT_GE(g.grid.x * NC, s.at("N"));
    EXPECT_LT((g.grid.x - 1) * NC, s.at("N"));
    EXPECT_GE(g.grid.y * MC, s.at("M"));
    EXPECT_LE(g.grid.y, std::max<std::int64_t>((s.at("M") + MC - 1) / MC, 8));
  }
}

TEST_F(GemmCpuKernel, SampledConfigurationsAreValid) {
  const Sizes s{{"M", 1000}, {"N", 1000}, {"K", 999}};
  const auto sample = sample_configs(kernel, s, 25, 5);
  EXPECT_EQ(sample.size(), 25u);
  for (const auto& p : sample) {
    EXPECT_FALSE(kernel.check(p, s).has_value());
    EXPECT_EQ(p.at("MC") % p.at("MR"), 0);
    EXPECT_LE(p.at("MR") * p.at("NV"), 28);
  }
}

}  // namespace
}  // namespace kforge
