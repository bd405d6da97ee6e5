// The library's attention kernels (cpu, and opencl where a device is) pass kforge's verification
// at sizes off every tile, causal and not, with grouped-query heads, fp32 and 16-bit storage; wrong variants of them (no
// RoPE, no causal mask, the last key tile dropped) are rejected; malformed sizes exit 2 naming the
// size; invalid parameter combinations are refused before compiling.
#include <gtest/gtest.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

EvalRequest request(const std::string& problem, Lang lang, const Sizes& sizes,
                    const ParamValues& params = {}, DType dtype = DType::fp32) {
  return test::library_request(problem, lang == Lang::cpp ? "cpu" : "opencl", sizes, dtype, params);
}

// Odd shapes: one position, a prime, one past the default tiles (64 and 128 on cpu, 32 on
// opencl), grouped-query heads (H/HKV = 3 and 2), several batches. Shape fuzzing adds more.
const Sizes kShapes[] = {
    {{"B", 1}, {"H", 1}, {"HKV", 1}, {"S", 1}, {"D", 2}},
    {{"B", 2}, {"H", 3}, {"HKV", 1}, {"S", 31}, {"D", 10}},
    {{"B", 1}, {"H", 4}, {"HKV", 2}, {"S", 129}, {"D", 34}},
};

class Attention : public ::testing::TestWithParam<Lang> {
 protected:
  void SetUp() override {
    try {
      backend_ = make_backend(GetParam() == Lang::cpp ? "cpu" : "opencl");
    } catch (const std::exception& e) {
      GTEST_SKIP() << e.what();
    }
    if (!backend_->can_run()) GTEST_SKIP() << "cannot run here: " << backend_->device();
  }
  EvalResult run(const EvalRequest& req) { return evaluate(req, *backend_); }
  // The thorough protocol, with 4 fuzzed shapes per call instead of 8: the reference costs
  // O(S²·D) per head, more than the fuzzer's work cap (the product of the sizes) assumes.
  void expect_passes(const std::string& problem, const Sizes& s, const ParamValues& params = {},
                     DType dtype = DType::fp32) {
    EvalRequest req = request(problem, GetParam(), s, params, dtype);
    req.verify.fuzz_shapes = 4;
    const EvalResult r = run(req);
    EXPECT_TRUE(r.passed()) << test::describe(r);
  }
  // The library kernel with `from` replaced by `to`: it must be rejected as incorrect.
  void expect_rejected(const std::string& problem, const Sizes& s, const std::string& from,
                       const std::string& to, const ParamValues& params = {}) {
    EvalRequest req = request(problem, GetParam(), s, params);
    const auto at = req.kernel.source.find(from);
    ASSERT_NE(at, std::string::npos) << "the kernel no longer contains: " << from;
    req.kernel.source.replace(at, from.size(), to);
    req.verify.trials = 2;
    const EvalResult r = run(req);
    EXPECT_EQ(r.disposition, Disposition::incorrect) << to << ": " << r.error << "\n" << r.compile_log;
    // Caught by the error bound (every output written, finite), not by a cruder check.
    ASSERT_TRUE(r.verify.has_value());
    EXPECT_EQ(r.verify->element_check, "bound") << r.error;  // at the requested sizes or a fuzzed shape
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(Attention, PassesAtOddShapes) {
  for (const Sizes& s : kShapes) expect_passes("attention", s);
}

TEST_P(Attention, CausalPassesAtOddShapes) {
  for (const Sizes& s : kShapes) expect_passes("attention.causal", s);
}

TEST_P(Attention, SmallTilesPass) {
  const ParamValues p = GetParam() == Lang::cpp
                            ? ParamValues{{"BQ", 8}, {"BKV", 16}, {"MR", 2}, {"NV", 1}, {"VW", 16}}
                            : ParamValues{{"BQ", 8}, {"BKV", 8}, {"DMAX", 32}};
  expect_passes("attention.causal", {{"B", 1}, {"H", 2}, {"HKV", 2}, {"S", 17}, {"D", 30}}, p);
}

// The cpu kernel pads three ways: query rows to whole stripes of NV·VW (G·BQ = 3·8 rows in
// stripes of 16), head dimensions to a multiple of MR (D = 30 with MR = 4, D = 34 with MR = 3)
// and the last key tile to a multiple of MR (S = 37); the padding must never reach the output.
TEST_P(Attention, PaddedMicroTilesPass) {
  if (GetParam() != Lang::cpp) GTEST_SKIP() << "cpu kernel parameters";
  expect_passes("attention.causal", {{"B", 1}, {"H", 3}, {"HKV", 1}, {"S", 37}, {"D", 30}},
                {{"BQ", 8}, {"BKV", 16}, {"MR", 4}, {"NV", 2}, {"VW", 8}});
  expect_passes("attention", {{"B", 1}, {"H", 3}, {"HKV", 1}, {"S", 53}, {"D", 34}},
                {{"BQ", 24}, {"BKV", 48}, {"MR", 3}, {"NV", 3}, {"VW", 0}});
}

TEST_P(Attention, SixteenBitStoragePasses) {
  const Sizes s{{"B", 2}, {"H", 3}, {"HKV", 1}, {"S", 37}, {"D", 18}};
  expect_passes("attention.causal", s, {}, DType::fp16);
  expect_passes("attention", s, {}, DType::bf16);
}

const Sizes kWrongShape{{"B", 1}, {"H", 2}, {"HKV", 1}, {"S", 70}, {"D", 16}};

TEST_P(Attention, KernelWithoutRopeIsRejected) {
  if (GetParam() == Lang::cpp)
    expect_rejected("attention", kWrongShape, "(float)std::sin(pos * theta)", "0.0f");
  else
    expect_rejected("attention", kWrongShape, "theta[d] = pow(", "theta[d] = 0.0f * pow(");
}

TEST_P(Attention, KernelIgnoringTheMaskIsRejected) {
  if (GetParam() == Lang::cpp)
    expect_rejected("attention.causal", kWrongShape, "causal = causal_flag != 0.0f", "causal = false");
  else
    expect_rejected("attention.causal", kWrongShape, "is_causal = causal != 0.0f", "is_causal = false");
}

TEST_P(Attention, KernelDroppingTheLastKeyTileIsRejected) {
  // S = 70 is not a multiple of the key tile (32): a loop that stops at the last whole tile
  // misses the last 6 keys, about a tenth of every row's softmax weight.
  if (GetParam() == Lang::cpp)
    expect_rejected("attention", kWrongShape, "j0 < kv_end; j0 += BKV", "j0 + BKV <= kv_end; j0 += BKV",
                    {{"BKV", 32}});
  else
    expect_rejected("attention", kWrongShape, "j0 < last; j0 += BKV", "j0 + BKV <= last; j0 += BKV");
}

TEST_P(Attention, InvalidParametersAreRefusedWithAReason) {
  const ParamValues p = GetParam() == Lang::cpp ? ParamValues{{"BQ", 16}, {"MR", 6}}
                                                : ParamValues{{"DMAX", 64}};
  const EvalResult r = run(request("attention", GetParam(),
                                   {{"B", 1}, {"H", 1}, {"HKV", 1}, {"S", 8}, {"D", 96}}, p));
  EXPECT_EQ(r.disposition, Disposition::invalid_config);
  EXPECT_NE(r.error.find(GetParam() == Lang::cpp ? "MR" : "DMAX"), std::string::npos) << r.error;
}

INSTANTIATE_TEST_SUITE_P(Backends, Attention, ::testing::Values(Lang::cpp, Lang::opencl),
                         [](const auto& info) { return std::string(lang_name(info.param)); });

TEST(AttentionCli, MalformedSizesExit2NamingTheSize) {
  const std::pair<const char*, const char*> cases[] = {
      {"D=63", "D=63"}, {"H=6,HKV=4", "H=6"}, {"S=0", "S=0"}, {"B=-1", "B=-1"}, {"D=258", "D=258"}};
  for (const auto& [sizes, named] : cases) {
    const auto r = test::kforge_cli(std::string("verify attention --backend cpu --size ") + sizes);
    EXPECT_EQ(r.exit_code, 2) << sizes << ": " << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << sizes << ": " << r.err;
  }
}

}  // namespace
}  // namespace kforge
