// gemm's cpu kernel in the 16-bit storage types, through the whole (thorough) verification
// protocol at shapes that are multiples of no tile: bf16 takes the AVX-512 BF16 dot-product path
// on a CPU that has it (this one), with its exact fallback for KC-slices whose products could
// fall below fp32's normal range (the structured subnormal_inputs and subnormal_products
// patterns run it); K beyond KC, odd, checks the pairs across slices and the single rounding of
// C at the end. The same kernel built without AVX-512 is tests/kernels/avx2_only_test.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "kernels/family_test.hpp"
#include "kforge/backend.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

// Thorough by default; quick (three trials at the sizes) where the shape alone is the point.
EvalResult verify_cpu(const Sizes& sizes, DType t, const ParamValues& params = {}, bool thorough = true,
                      int threads = 2) {
  auto backend = make_backend("cpu", {.threads = threads});
  EvalRequest req = test::library_request("gemm", "cpu", sizes, t, params);
  req.verify.thorough = thorough;
  if (!thorough) req.verify.trials = 3;
  return evaluate(req, *backend);
}

TEST(GemmCpu, Bf16PassesThoroughAtOddShapes) {
  for (const Sizes& s : {Sizes{{"M", 257}, {"N", 383}, {"K", 129}}, Sizes{{"M", 1}, {"N", 383}, {"K", 129}}}) {
    const EvalResult r = verify_cpu(s, DType::bf16);
    EXPECT_TRUE(r.passed()) << test::describe(r);
    ASSERT_TRUE(r.verify.has_value());
    const auto& checks = r.verify->checks;  // the structured patterns ran (and passed)
    EXPECT_TRUE(std::any_of(checks.begin(), checks.end(),
                            [](const CheckResult& c) { return c.name == "structured" && c.passed; }));
  }
}

// K = 2*KC + 1 with KC = 64: three slices, the last a single k (an unpaired bf16).
TEST(GemmCpu, SixteenBitTypesRoundOnceOverManySlices) {
  for (const DType t : {DType::bf16, DType::fp16}) {
    const EvalResult r = verify_cpu({{"M", 37}, {"N", 70}, {"K", 129}}, t, {{"KC", 64}, {"MC", 24}, {"NC", 64}},
                                       /*thorough=*/t == DType::bf16);
    EXPECT_TRUE(r.passed()) << test::describe(r);
  }
}

// The 256-bit form of the dot path (VW = 8) and an explicit 512-bit one.
TEST(GemmCpu, Bf16AtBothVectorWidths) {
  for (const std::int64_t vw : {8, 16}) {
    const EvalResult r = verify_cpu({{"M", 29}, {"N", 53}, {"K", 67}}, DType::bf16, {{"VW", vw}, {"NV", 2}, {"MR", 4}}, false);
    EXPECT_TRUE(r.passed()) << "VW=" << vw << ": " << test::describe(r);
  }
}

// A block owns a run of rows that it walks in MC-row sub-blocks, reusing each packed slice of B;
// how many runs depends on the threads (at least two blocks per thread). Odd sizes (a partial
// MR panel at the end, a partial sub-block per run), K over three slices, A packed and read in
// place (fp32; NC = 64 is narrow enough for PACK_A = 2 to read it in place), 1 to 3 threads;
// bf16 keeps the run's fp32 partial sums.
TEST(GemmCpu, RowRunsAtEveryThreadCountAndPacking) {
  for (const int threads : {1, 2, 3})
    for (const auto& [t, pack_a] : {std::pair{DType::fp32, 1}, std::pair{DType::fp32, 2}, std::pair{DType::bf16, 2}}) {
      const EvalResult r = verify_cpu({{"M", 203}, {"N", 70}, {"K", 129}}, t,
                                      {{"MC", 24}, {"NC", 64}, {"KC", 64}, {"PACK_A", pack_a}}, false, threads);
      EXPECT_TRUE(r.passed()) << threads << " threads, PACK_A=" << pack_a << ", " << dtype_name(t) << ": "
                              << test::describe(r);
    }
}

// fp32's pack_a transposes 8 x 8 blocks in registers: panel heights of 4 to 12 (one group of
// rows, partial or whole, or 8 and a partial one), a partial last panel (M = 203), and K = 129 over slices
// of equal depth (KC = 64: three of 48, 48 and 33, the last with a scalar tail of one k).
// PACK_A = 1 packs every panel (NC = 64 would read A in place otherwise).
TEST(GemmCpu, PackedAAtEveryPanelHeightOverEvenSlices) {
  for (const std::int64_t mr : {4, 6, 8, 12}) {
    const EvalResult r = verify_cpu({{"M", 203}, {"N", 70}, {"K", 129}}, DType::fp32,
                                    {{"MR", mr}, {"NV", 1}, {"MC", 24}, {"NC", 64}, {"KC", 64}, {"PACK_A", 1}},
                                    false);
    EXPECT_TRUE(r.passed()) << "MR=" << mr << ": " << test::describe(r);
  }
}

}  // namespace
}  // namespace kforge
