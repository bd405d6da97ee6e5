// The index_width check for conv2d (and its blocked layouts), moe_grouped_gemm and attention: one
// input past 2^31 elements split along images (conv2d's x), tokens (moe's X) or batches
// (attention's Q, K, V and O), zeros but the last two. conv2d and moe keep the kernel's work at
// 16 to 32 operations per input element (tens of GFLOP, seconds) and the output small enough to
// be written and compared whole; attention's O grows with Q and is written whole (or folded), and
// its run takes about a minute. A convolution, an MoE layer and an attention with a 32-bit
// image/token/batch offset are rejected by it; their 64-bit twins and the library's kernels pass.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kforge/problem.hpp"
#include "kforge/verify.hpp"
#include "test_util.hpp"
#include "verify/index_width_ran.hpp"

namespace kforge {
namespace {

constexpr std::int64_t k2To31 = std::int64_t{1} << 31;

TEST(IndexWidthConvMoeAttention, Conv2dLayoutsDeclareAnInputPast2To31ElementsAtASmallOutputAndWork) {
  const Sizes one = {{"N", 1}, {"C", 64}, {"H", 56}, {"W", 56}, {"K", 64}, {"R", 1}, {"S", 1},
                     {"stride", 1}, {"pad", 0}, {"dil", 1}};
  for (const char* name : {"conv2d", "conv2d_nchw8c", "conv2d_nchw8c_xplain"})
    for (const Sizes& asked : {find_problem(name)->default_sizes(), one}) {
      const auto p = find_problem(name);
      const auto w = p->wide_index_shape(asked);
      ASSERT_FALSE(w.sizes.empty()) << name;
      const std::int64_t image = w.sizes.at("C") * w.sizes.at("H") * w.sizes.at("W");
      EXPECT_GT(p->tensor_elements(0, w.sizes), k2To31) << name << ": x";
      EXPECT_GE((w.sizes.at("N") - 1) * image, k2To31) << name << ": the last image starts where an int wraps";
      EXPECT_EQ(w.live.at("N"), 2) << name;
      // R = S = 1 is kept (the 1x1 kernels apply only there), 3x3 otherwise.
      EXPECT_EQ(w.sizes.at("R") == 1, asked.at("R") == 1) << name;
      EXPECT_EQ(w.sizes.at("C") % 8, 0) << name;
      EXPECT_EQ(w.sizes.at("K") % 8, 0) << name;
      EXPECT_LT(p->flops(w.sizes), 40e9) << name << ": seconds, not minutes";
      // y is written and compared whole: below the sampled outputs' size.
      EXPECT_LT(p->tensor_elements(2, w.sizes) * 4, static_cast<std::int64_t>(kWideSampledOutputBytes)) << name;
      Sizes small = w.sizes;
      small["N"] = 1;
      p->check_sizes(small);  // one image is an ordinary instance
    }
  // conv2d at C = 1: the conv2d_c1 kernels apply there and y would be as large as x.
  Sizes c1 = find_problem("conv2d")->default_sizes();
  c1["C"] = 1;
  EXPECT_TRUE(find_problem("conv2d")->wide_index_shape(c1).sizes.empty());
}

TEST(IndexWidthConvMoeAttention, MoeDeclaresAnInputPast2To31ElementsAtASmallOutputAndWork) {
  const auto p = find_problem("moe_grouped_gemm");
  const auto w = p->wide_index_shape(p->default_sizes());
  ASSERT_FALSE(w.sizes.empty());
  EXPECT_GT(p->tensor_elements(0, w.sizes), k2To31);
  EXPECT_GE((w.sizes.at("T") - 1) * w.sizes.at("H"), k2To31) << "the last token starts where an int wraps";
  EXPECT_EQ(w.live.at("T"), 2);
  EXPECT_LT(p->flops(w.sizes), 80e9);
  EXPECT_LT(p->tensor_elements(4, w.sizes) * 4, static_cast<std::int64_t>(kWideSampledOutputBytes));
}

TEST(IndexWidthConvMoeAttention, AttentionDeclaresQKVAndOPast2To31ElementsAlongBatches) {
  for (const char* name : {"attention", "attention.causal"}) {
    const auto p = find_problem(name);
    const auto w = p->wide_index_shape(p->default_sizes());
    ASSERT_FALSE(w.sizes.empty()) << name;
    const std::int64_t head = w.sizes.at("S") * w.sizes.at("D");
    for (std::size_t t = 0; t < 4; ++t) EXPECT_GT(p->tensor_elements(t, w.sizes), k2To31) << name << " tensor " << t;
    EXPECT_GE((w.sizes.at("B") - 1) * w.sizes.at("H") * head, k2To31) << name << ": the last batch starts where an int wraps";
    EXPECT_EQ(w.live.at("B"), 2) << name;
    p->check_sizes(w.live);
    // O written whole: 4 GiB in bf16, as the row-wise families' Y.
    const WideIndexBytes b = wide_index_bytes(*p, w, DType::bf16);
    EXPECT_GT(b.resident, 4.0 * (1 << 30)) << name;
    EXPECT_LT(b.resident, 4.1 * (1 << 30)) << name;
  }
}

void expect_library_passes(const std::string& problem, const std::string& sizes, const std::string& more = "") {
  const auto r = test::kforge_cli("verify " + problem + " --backend cpu --size " + sizes + more + " --index-width --json");
  ASSERT_EQ(r.exit_code, 0) << problem << r.out << r.err;
  const auto j = test::parse_or_fail(r);
  const nlohmann::json& doc = j.is_array() ? j.at(0) : j;
  EXPECT_EQ(doc.value("disposition", ""), "passed") << r.out;
  EXPECT_TRUE(test::index_width_ran(doc)) << problem << ": index_width did not run\n" << r.out;
}

// The library's kernels, the cheapest runs: conv2d_1x1 (R = S = 1) and the grouped GEMM.
TEST(IndexWidthConvMoeAttention, TheLibrary1x1ConvolutionAndGroupedGemmPass) {
  expect_library_passes("conv2d", "N=2,C=5,H=7,W=6,K=4,R=1,S=1,stride=1,pad=0,dil=1");
  expect_library_passes("moe_grouped_gemm", "T=37,H=50,F=24,E=4,K=2");
}

// The long suite (label `long`; KFORGE_INDEX_WIDTH_LONG=1 ctest -L long -R IndexWidthConvMoeAttentionLong):
// the 3x3 runs (the general kernel and the blocked layouts, 9 to 22 s each on a loaded host) and
// the corpus kernels, whose plain loops take 30 s (moe) to 2 minutes (conv2d) loaded.
bool long_asked() {
  const char* v = std::getenv("KFORGE_INDEX_WIDTH_LONG");
  return v && std::string(v) == "1";
}

TEST(IndexWidthConvMoeAttentionLong, TheLibrary3x3ConvolutionsPass) {
  if (!long_asked()) GTEST_SKIP() << "set KFORGE_INDEX_WIDTH_LONG=1 (about a minute)";
  expect_library_passes("conv2d", "N=2,C=5,H=7,W=6,K=4,R=3,S=3,stride=1,pad=1,dil=1");
  expect_library_passes("conv2d_nchw8c", "N=2,C=16,H=7,W=6,K=8,R=3,S=3,stride=1,pad=1,dil=1");
  expect_library_passes("conv2d_nchw8c_xplain", "N=2,C=3,H=9,W=9,K=8,R=3,S=3,stride=2,pad=1,dil=1");
}

const std::string kData = KFORGE_TEST_DATA;

test::CommandResult eval(const std::string& args) { return test::kforge_cli("eval " + args + " --json"); }

void expect_rejected(const test::CommandResult& bad) {
  const auto b = test::parse_or_fail(bad);
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_TRUE(b.value("disposition", "") == "crashed" || b.value("disposition", "") == "incorrect") << bad.out;
  EXPECT_EQ(b.value("verify", nlohmann::json::object()).value("failed_check", ""), "index_width") << bad.out;
}

void expect_passed(const test::CommandResult& good) {
  ASSERT_EQ(good.exit_code, 0) << good.out << good.err;
  const auto g = test::parse_or_fail(good);
  EXPECT_EQ(g.value("disposition", ""), "passed") << good.out;
  EXPECT_TRUE(test::index_width_ran(g)) << good.out;
}

const std::string kConv = " --problem conv2d --lang cpp --entry conv2d --grid N"
                          " --size N=3,C=5,H=7,W=6,K=4,R=1,S=1,stride=1,pad=0,dil=1 --timeout 600";
const std::string kMoe = " --problem moe_grouped_gemm --lang cpp --entry moe --grid 'ceil_div(T,16)'"
                         " --size T=37,H=50,F=24,E=4,K=2 --timeout 600";
// bf16: O's 2^31 elements written whole take 4 GiB, not 8.
const std::string kAttention = " --problem attention --lang cpp --entry attention --grid 'H,B'"
                               " --size B=2,H=4,HKV=2,S=19,D=16 --dtype bf16 --timeout 600";

TEST(IndexWidthConvMoeAttentionLong, A32BitImageOffsetIsRejectedAndItsTwinPasses) {
  if (!long_asked()) GTEST_SKIP() << "set KFORGE_INDEX_WIDTH_LONG=1 (about 4 minutes loaded)";
  expect_rejected(eval("--source " + kData + "/../verify/wrong/conv2d_int32_image_index.cpp" + kConv));
  expect_passed(eval("--source " + kData + "/conv2d_64bit_image_index.cpp" + kConv));
}

TEST(IndexWidthConvMoeAttentionLong, A32BitTokenOffsetIsRejectedAndItsTwinPasses) {
  if (!long_asked()) GTEST_SKIP() << "set KFORGE_INDEX_WIDTH_LONG=1 (about a minute loaded)";
  expect_rejected(eval("--source " + kData + "/../verify/wrong/moe_int32_token_index.cpp" + kMoe));
  expect_passed(eval("--source " + kData + "/moe_64bit_token_index.cpp" + kMoe));
}

TEST(IndexWidthConvMoeAttentionLong, AttentionA32BitBatchOffsetIsRejectedAndItsTwinAndTheLibraryPass) {
  if (!long_asked()) GTEST_SKIP() << "set KFORGE_INDEX_WIDTH_LONG=1 (several minutes loaded)";
  expect_library_passes("attention", "B=1,H=2,HKV=1,S=24,D=16", " --dtype bf16");
  expect_rejected(eval("--source " + kData + "/../verify/wrong/attention_int32_batch_index.cpp" + kAttention));
  expect_passed(eval("--source " + kData + "/attention_64bit_batch_index.cpp" + kAttention));
}

}  // namespace
}  // namespace kforge
