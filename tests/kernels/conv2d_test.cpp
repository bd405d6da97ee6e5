// The conv2d family: its three kernels (general, single channel, 1x1) pass kforge's
// verification on cpu and opencl at odd shapes and at the edge cases of a convolution (padding
// wider than the window, stride longer than the window, 1x1 filters with stride and padding,
// 1x1 images, one input channel, dilation so wide the window leaves local memory); the library
// picks the single-channel kernel exactly when C == 1 and the 1x1 kernel exactly when
// R == S == 1 otherwise (a spec's "applies"); malformed sizes exit 2 naming the size.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using test::describe;
using test::library_request;

// N, C, H, W, K, R, S, stride, pad, dil.
Sizes conv(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K,
           std::int64_t R, std::int64_t S, std::int64_t stride, std::int64_t pad, std::int64_t dil) {
  return {{"N", N}, {"C", C}, {"H", H}, {"W", W}, {"K", K}, {"R", R}, {"S", S},
          {"stride", stride}, {"pad", pad}, {"dil", dil}};
}

const Sizes kCases[] = {
    conv(1, 1, 1, 1, 1, 1, 1, 1, 0, 1),      // all ones
    conv(2, 3, 13, 17, 5, 3, 3, 1, 1, 1),    // odd everywhere, "same" padding
    conv(1, 7, 31, 37, 19, 5, 3, 2, 2, 1),   // stride 2, R != S
    conv(1, 2, 5, 6, 3, 2, 2, 1, 3, 1),      // padding larger than the window
    conv(1, 3, 17, 19, 4, 2, 2, 3, 0, 1),    // stride longer than the window (skipped pixels)
    conv(2, 5, 7, 9, 11, 1, 1, 1, 0, 1),     // 1x1 filters: the 1x1 kernel (a GEMM per image)
    conv(1, 13, 15, 14, 7, 1, 1, 2, 1, 1),   // 1x1, stride 2 (downsampling) with padding
    conv(1, 3, 5, 4, 5, 1, 1, 3, 2, 1),      // 1x1, padding and stride > window: zero columns
    conv(3, 67, 1, 1, 17, 1, 1, 1, 0, 1),    // 1x1 images
    conv(1, 2, 15, 16, 3, 3, 3, 1, 2, 2),    // dilation
    conv(1, 1, 33, 65, 10, 3, 3, 1, 1, 1),   // one channel: the C = 1 kernel
    conv(2, 1, 29, 31, 9, 7, 7, 2, 3, 1),    // one channel, 7x7 stride 2
};

class Conv2d : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = make_backend(GetParam());
    if (!backend_->can_run()) GTEST_SKIP() << "cannot run " << GetParam() << ": " << backend_->device();
  }
  EvalResult run(const Sizes& s, DType t, const ParamValues& params = {}) {
    return evaluate(library_request("conv2d", GetParam(), s, t, params), *backend_);
  }
  void expect_passes(const Sizes& s, DType t, const ParamValues& params = {}) {
    const EvalResult r = run(s, t, params);
    EXPECT_TRUE(r.passed()) << r.kernel << " " << describe(r);
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(Conv2d, Fp32PassesAtOddShapesAndEdgeCases) {
  for (const Sizes& s : kCases) expect_passes(s, DType::fp32);
}

// fp16/bf16 storage, and parameters other than the defaults: small tiles and scalar or narrow
// vectors, so many blocks and partial tiles in every dimension. On opencl both at once, since
// every configuration costs a PoCL compile.
TEST_P(Conv2d, SixteenBitStorageAndOtherParametersPass) {
  const Sizes s = conv(1, 4, 10, 23, 13, 3, 2, 1, 1, 1);
  const Sizes s1 = conv(1, 1, 12, 19, 5, 5, 5, 1, 2, 1);
  if (GetParam() == "cpu") {
    expect_passes(s, DType::bf16);
    expect_passes(s1, DType::fp16);
    expect_passes(s, DType::fp32, {{"KR", 3}, {"QV", 1}, {"VW", 8}, {"KB", 12}, {"PB", 7}});
    expect_passes(s1, DType::fp32, {{"KR", 6}, {"QV", 3}, {"VW", 8}, {"PB", 1}, {"NT", 0}});
  } else {
    expect_passes(s, DType::bf16, {{"VQ", 4}, {"QDIM", 2}, {"KWG", 4}, {"KDIM", 2}, {"EW", 9}, {"XLM", 1024}, {"WLOCAL", 1}});
    expect_passes(s1, DType::fp16, {{"VQ", 1}, {"QDIM", 8}, {"PDIM", 2}, {"KWI", 4}, {"XLM", 1024}});
  }
}

// The general kernel's channel blocks: C = 19 in blocks of 4 (the last one short), partial sums
// carried in the fp32 buffer; the 3x3 stride-1 path (unrolled taps) and any other window (tap
// offsets), K = 13 not a multiple of KR (the last group's rows repeat a filter, never stored),
// and 16-bit storage (filters converted per block), prefetching on.
TEST_P(Conv2d, GeneralKernelChannelBlocksPass) {
  if (GetParam() != "cpu") GTEST_SKIP() << "cpu kernel parameters";
  const Sizes taps3 = conv(1, 19, 11, 21, 13, 3, 3, 1, 1, 1);
  const Sizes other = conv(2, 19, 12, 17, 13, 3, 5, 2, 2, 1);
  for (const Sizes& s : {taps3, other}) {
    expect_passes(s, DType::fp32, {{"KR", 6}, {"QV", 2}, {"KB", 12}, {"PB", 4}, {"CB", 4}, {"PF", 1}});
    expect_passes(s, DType::fp32, {{"KR", 4}, {"QV", 3}, {"VW", 8}, {"KB", 8}, {"PB", 7}, {"CB", 8}});
    expect_passes(s, DType::bf16, {{"KR", 6}, {"QV", 2}, {"KB", 48}, {"PB", 2}, {"CB", 4}});
  }
}

// The 1x1 kernel with the reduction split into slices (C = 131 > KC = 64: partial sums carried
// in y for fp32, in an fp32 tile for 16-bit), small tiles, and a strided, padded gather.
TEST_P(Conv2d, OneByOneSlicedReductionAndOtherParametersPass) {
  const Sizes s = conv(1, 131, 9, 11, 23, 1, 1, 1, 0, 1);
  const Sizes strided = conv(2, 70, 13, 12, 9, 1, 1, 2, 1, 1);
  if (GetParam() == "cpu") {
    expect_passes(s, DType::bf16, {{"KC", 64}});
    expect_passes(strided, DType::fp16, {{"KC", 64}});
    expect_passes(s, DType::fp32, {{"MR", 4}, {"NV", 1}, {"VW", 8}, {"MC", 24}, {"NC", 64}, {"KC", 64}});
  } else {
    expect_passes(s, DType::bf16, {{"VQ", 4}, {"QDIM", 2}, {"KDIM", 2}, {"KWI", 4}});
    expect_passes(strided, DType::fp16, {{"VQ", 8}, {"QDIM", 1}, {"KDIM", 4}, {"KWI", 2}});
  }
}

// The 1x1 cpu kernel's blocks own runs of filters, walked in MC-filter sub-blocks over one packed
// slice of X_n; how many runs depends on the threads (at least two blocks per thread, counting
// pixel blocks and images). K = 101 (a partial MR panel, a partial sub-block per run), C = 131
// over three slices (KC = 64), two images, a strided gather, 1 to 3 threads; bf16 keeps the run's
// fp32 partial sums.
TEST(Conv2dCpu, OneByOneRowRunsAtEveryThreadCount) {
  const Sizes plain = conv(2, 131, 9, 11, 101, 1, 1, 1, 0, 1);
  const Sizes strided = conv(1, 131, 13, 12, 101, 1, 1, 2, 1, 1);
  const ParamValues params = {{"MC", 24}, {"NC", 64}, {"KC", 64}};
  for (const int threads : {1, 2, 3}) {
    auto backend = make_backend("cpu", {.threads = threads});
    for (const auto& [s, t] : {std::pair{plain, DType::fp32}, std::pair{strided, DType::fp32}, std::pair{plain, DType::bf16}}) {
      EvalRequest req = library_request("conv2d", "cpu", s, t, params);
      req.verify.thorough = false;
      req.verify.trials = 2;
      const EvalResult r = evaluate(req, *backend);
      EXPECT_EQ(r.kernel, "conv2d_1x1.cpu");
      EXPECT_TRUE(r.passed()) << threads << " threads, " << dtype_name(t) << ": " << describe(r);
    }
  }
}

// A window wider than local memory holds (opencl, cuda) takes the direct path.
TEST_P(Conv2d, HugeDilationPasses) {
  expect_passes(conv(1, 2, 3, 2300, 3, 1, 3, 1, 1, 1100), DType::fp32);
  expect_passes(conv(1, 1, 3, 2300, 3, 1, 3, 1, 1, 1100), DType::fp32);
}

TEST_P(Conv2d, InvalidParametersAreRefusedWithAReason) {
  const ParamValues bad = GetParam() == "cpu" ? ParamValues{{"KR", 8}, {"KB", 12}}
                                              : ParamValues{{"KWG", 4}, {"KDIM", 8}};
  const EvalResult r = run(conv(1, 3, 8, 8, 4, 3, 3, 1, 1, 1), DType::fp32, bad);
  EXPECT_EQ(r.disposition, Disposition::invalid_config);
  EXPECT_NE(r.error.find(GetParam() == "cpu" ? "KB" : "KDIM"), std::string::npos) << r.error;
}

INSTANTIATE_TEST_SUITE_P(Backends, Conv2d, ::testing::Values("cpu", "opencl"));

TEST(Conv2dLibrary, PicksTheSingleChannelThenTheOneByOneKernel) {
  const auto p = find_problem("conv2d");
  const auto picked = [&](Lang l, const Sizes& s) { return library_kernel(*p, l, p->resolve_sizes(s)).name; };
  for (Lang l : {Lang::cpp, Lang::opencl, Lang::cuda}) {
    const std::string suffix = "." + std::string(lang_name(l) == "cpp" ? "cpu" : lang_name(l));
    EXPECT_EQ(library_kernel(*p, l).name, "conv2d" + suffix);  // defaults: C = 64, 3x3
    EXPECT_EQ(picked(l, {{"C", 1}}), "conv2d_c1" + suffix);
    EXPECT_EQ(picked(l, {{"C", 2}}), "conv2d" + suffix);
    EXPECT_EQ(picked(l, {{"R", 1}, {"S", 1}}), "conv2d_1x1" + suffix);
    EXPECT_EQ(picked(l, {{"R", 1}, {"S", 1}, {"stride", 2}}), "conv2d_1x1" + suffix);
    EXPECT_EQ(picked(l, {{"R", 1}, {"S", 3}}), "conv2d" + suffix);
    EXPECT_EQ(picked(l, {{"C", 1}, {"R", 1}, {"S", 1}}), "conv2d_c1" + suffix);
  }
}

TEST(KernelSpecApplies, ParsedEvaluatedOverSizesAndWrittenBack) {
  const auto j = nlohmann::json::parse(
      R"({"name": "k", "problem": "p", "source": "k.cpp", "applies": ["C == 1", "K % 8 == 0"]})");
  const KernelSpec k = KernelSpec::from_json_with_source(j, "");
  EXPECT_TRUE(k.applies_to({{"C", 1}, {"K", 16}}));
  EXPECT_FALSE(k.applies_to({{"C", 1}, {"K", 12}}));
  EXPECT_FALSE(k.applies_to({{"C", 3}, {"K", 16}}));
  EXPECT_EQ(k.to_json()["applies"].size(), 2u);
  const KernelSpec general = KernelSpec::from_json_with_source(nlohmann::json::parse(R"({"name": "g"})"), "");
  EXPECT_TRUE(general.applies_to({{"C", 3}}));
  EXPECT_FALSE(general.to_json().contains("applies"));
}

TEST(Conv2dCli, MalformedSizesExit2NamingTheSize) {
  struct Case {
    const char* sizes;
    const char* named;
  };
  for (const Case& c : {Case{"pad=-1", "pad"}, Case{"stride=0", "stride"}, Case{"dil=0", "dil"},
                        Case{"C=0", "C"}, Case{"H=2,R=7,pad=1", "P"}, Case{"W=3,S=4,pad=0", "Q"}}) {
    const auto r = test::kforge_cli(std::string("verify conv2d --backend cpu --size ") + c.sizes);
    EXPECT_EQ(r.exit_code, 2) << c.sizes << ": " << r.err;
    EXPECT_NE(r.err.find(c.named), std::string::npos) << c.sizes << ": " << r.err;
  }
}

}  // namespace
}  // namespace kforge
