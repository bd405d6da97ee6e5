// conv2d_nchw8c (channels blocked by 8: x, y nChw8c, w OIhw8i8o) and conv2d_nchw8c_xplain (x
// plain NCHW for C < 8, w OIhw8o, y nChw8c): their cpu and opencl kernels
// pass kforge's verification at odd spatial shapes (H, W, P, Q multiples of no tile), stride 2
// and 3, padding 0, 1 and wider than the window, dilation 2, 1x1 filters, filter-block counts
// that leave a short micro-tile group and channel-block counts that need two reduction chunks;
// fp16/bf16 storage and other tile parameters; the reference agrees with conv2d's (NCHW) on the
// same numbers reordered; C or K not a multiple of 8 exits 2 naming the size and the rule (K only,
// for the plain-x problem); and
// wrong kernels (the last filter block dropped, a border tap read past the row; at stride 2 a
// staged padding column taken from the input, the stride phases ignored; a 1x1 block's run
// of pixels cut short) are rejected.
#include <gtest/gtest.h>


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
    conv(1, 8, 1, 1, 8, 1, 1, 1, 0, 1),        // one block of each, one pixel
    conv(2, 16, 13, 17, 24, 3, 3, 1, 1, 1),    // odd plane, "same" padding, 3 filter blocks
    conv(1, 8, 31, 37, 40, 5, 3, 2, 2, 1),     // stride 2, R != S
    conv(1, 16, 5, 6, 8, 2, 2, 1, 3, 1),       // padding larger than the window
    conv(1, 8, 17, 19, 16, 2, 2, 3, 0, 1),     // stride longer than the window, no padding
    conv(1, 24, 15, 16, 16, 3, 3, 1, 2, 2),    // dilation 2
    conv(2, 32, 7, 9, 8, 1, 1, 1, 0, 1),       // 1x1
    conv(1, 72, 9, 11, 88, 3, 3, 1, 1, 1),     // 9 channel blocks (two chunks), 11 filter blocks
    // Stride > 1 (cpu: the staged, phase-split rows), P and Q odd, no multiple of the tile:
    conv(1, 8, 23, 21, 16, 7, 7, 2, 3, 1),     // 7x7/2, pad 3 (conv1's window): P = 12, Q = 11
    conv(1, 8, 20, 23, 16, 3, 3, 3, 1, 2),     // stride 3, dilation 2: taps in all 3 phases, Q = 7
    conv(1, 16, 13, 15, 16, 1, 1, 2, 0, 1),    // 1x1/2 (conv3_1's projection): P = 7, Q = 8
};

class Conv2dNchw8c : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = make_backend(GetParam());
    if (!backend_->can_run()) GTEST_SKIP() << "cannot run " << GetParam() << ": " << backend_->device();
  }
  void expect_passes(const Sizes& s, DType t, const ParamValues& params = {},
                     const std::string& problem = "conv2d_nchw8c") {
    const EvalResult r = evaluate(library_request(problem, GetParam(), s, t, params), *backend_);
    EXPECT_TRUE(r.passed()) << r.kernel << " " << describe(r);
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(Conv2dNchw8c, Fp32PassesAtOddShapesAndEdgeCases) {
  for (const Sizes& s : kCases) expect_passes(s, DType::fp32);
}

// 16-bit storage (x, w converted per block, partial sums in an fp32 buffer) and tiles other than
// the defaults: tails of every length, a short filter group, one-block chunks, the other loop
// order. On opencl, small work-groups and one pixel per work-item.
TEST_P(Conv2dNchw8c, SixteenBitStorageAndOtherParametersPass) {
  const Sizes s = conv(1, 24, 10, 23, 40, 3, 2, 1, 1, 1);
  const Sizes strided = conv(2, 16, 12, 19, 24, 5, 5, 2, 2, 1);
  if (GetParam() == "cpu") {
    expect_passes(s, DType::bf16, {{"OW", 5}, {"KB8", 3}, {"KBB", 3}, {"PB", 2}, {"CBB", 2}, {"ORD", 1}});
    // 1x1 from staged 16-bit rows, the block's two 9-wide rows tiled as one run (same build).
    expect_passes(conv(1, 24, 7, 9, 40, 1, 1, 1, 0, 1), DType::bf16,
                  {{"OW", 5}, {"KB8", 3}, {"KBB", 3}, {"PB", 2}, {"CBB", 2}, {"ORD", 1}});
    expect_passes(strided, DType::fp16, {{"CBB", 1}, {"PB", 7}});
    expect_passes(strided, DType::fp32, {{"OW", 8}, {"KB8", 1}, {"KBB", 1}, {"PB", 1}, {"CBB", 1}});
  } else {
    expect_passes(s, DType::bf16, {{"QWI", 7}, {"QDIM", 2}, {"KDIM", 2}});
    expect_passes(strided, DType::fp16, {{"QWI", 1}, {"QDIM", 8}, {"KDIM", 1}});
  }
}

// x plain: one channel (an image filter), three (a first layer, 7x7 stride 2), five with
// dilation, odd planes, a short filter group; bf16 with other tiles.
TEST_P(Conv2dNchw8c, PlainXPassesAtOddShapes) {
  const std::string xplain = "conv2d_nchw8c_xplain";
  expect_passes(conv(1, 1, 33, 65, 40, 3, 3, 1, 1, 1), DType::fp32, {}, xplain);
  expect_passes(conv(2, 3, 29, 31, 24, 7, 7, 2, 3, 1), DType::fp32, {}, xplain);
  expect_passes(conv(1, 5, 15, 16, 8, 3, 3, 1, 2, 2), DType::fp32, {}, xplain);
  if (GetParam() == "cpu")
    expect_passes(conv(1, 1, 12, 19, 24, 5, 5, 1, 2, 1), DType::bf16, {{"OW", 5}, {"KB8", 2}, {"KBB", 2}, {"CBB", 1}}, xplain);
}

INSTANTIATE_TEST_SUITE_P(Backends, Conv2dNchw8c, ::testing::Values("cpu", "opencl"));

// The layouts state one convolution: the blocked problems' references on x, w reordered from an
// NCHW instance equal conv2d's reference on that instance, element for element (reordered back).
// xb: channels per block of x (8: nChw8c; 1: plain).
void expect_reference_matches_nchw(const std::string& name, std::int64_t xb) {
  const auto plain = find_problem("conv2d"), blocked = find_problem(name);
  const std::int64_t N = 2, C = 16, H = 7, W = 9, K = 24, R = 3, S = 2;
  const std::int64_t P = 4, Q = 5;  // (7 + 2 - 2 - 1) / 2 + 1, (9 + 2 - 1 - 1) / 2 + 1
  const Sizes s = conv(N, C, H, W, K, R, S, 2, 1, 1);
  Instance a = plain->make_instance(s, DType::fp32, Distribution::normal, 7, 0);
  Instance b = blocked->make_instance(s, DType::fp32, Distribution::normal, 7, 0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t v = 0; v < W; ++v)
          b.tensors[0][(((n * C / xb + c / xb) * H + h) * W + v) * xb + c % xb] = a.tensors[0][((n * C + c) * H + h) * W + v];
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t t = 0; t < S; ++t)
          b.tensors[1][((((k / 8) * (C / xb) + c / xb) * R + r) * S + t) * xb * 8 + (c % xb) * 8 + k % 8] =
              a.tensors[1][((k * C + c) * R + r) * S + t];
  std::vector<std::vector<double>> ya, ma, yb, mb;
  plain->reference(a, ya, ma);
  blocked->reference(b, yb, mb);
  ASSERT_EQ(ya[0].size(), static_cast<std::size_t>(N * K * P * Q));
  ASSERT_EQ(yb[0].size(), ya[0].size());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          const std::size_t i = ((n * K + k) * P + p) * Q + q, j = (((n * K / 8 + k / 8) * P + p) * Q + q) * 8 + k % 8;
          ASSERT_EQ(ya[0][i], yb[0][j]) << name << " " << n << " " << k << " " << p << " " << q;
          ASSERT_EQ(ma[0][i], mb[0][j]) << name;
        }
}

TEST(Conv2dNchw8cReference, AgreesWithTheNchwReference) {
  expect_reference_matches_nchw("conv2d_nchw8c", 8);
  expect_reference_matches_nchw("conv2d_nchw8c_xplain", 1);
}

// The cpu kernel with `from` replaced by `to` in its source, verified at `s`.
EvalResult run_edited(const Sizes& s, const std::string& from, const std::string& to) {
  auto backend = make_backend("cpu");
  EvalRequest req = library_request("conv2d_nchw8c", "cpu", s);
  test::plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

TEST(Conv2dNchw8cCpu, WrongKernelsAreRejected) {
  const Sizes s = conv(1, 16, 11, 13, 24, 3, 3, 1, 1, 1);
  const std::string kbb = "kbb = K8 - kb0 < KBB ? K8 - kb0 : KBB;";
  // The last filter block of the last pool block never computed (its outputs keep the poison).
  const EvalResult dropped = run_edited(s, kbb, "kbb = (K8 - kb0 < KBB ? K8 - kb0 : KBB) - (kb0 + KBB >= K8);");
  EXPECT_FALSE(dropped.passed()) << describe(dropped);
  // A border tap one column past the row read as an input value instead of zero.
  const EvalResult border = run_edited(s, "col >= 0 && col < W ?", "col >= 0 && col <= W ?");
  EXPECT_FALSE(border.passed()) << describe(border);
  // Stride 2 (staged rows): the padding column past the row's end staged from the input.
  const Sizes strided = conv(1, 16, 11, 13, 24, 3, 3, 2, 1, 1);  // reads padded column 13 = W
  const EvalResult staged_border = run_edited(strided, "if (col >= 0 && col < W)", "if (col >= 0 && col <= W)");
  EXPECT_FALSE(staged_border.passed()) << describe(staged_border);
  // Stride 2: every tap read from phase plane 0 (the odd taps' plane offset dropped).
  const EvalResult phase = run_edited(strided, "toff[t] = (t * dil) % stride * jw + t * dil / stride;",
                                      "toff[t] = t * dil / stride;");
  EXPECT_FALSE(phase.passed()) << describe(phase);
  // 1x1 at stride 1: the block's rows tiled as one run, its last pixel left out.
  const EvalResult flat = run_edited(conv(1, 16, 7, 9, 24, 1, 1, 1, 0, 1), "rowpix = flat ? pb * Q : Q;",
                                     "rowpix = flat ? pb * Q - 1 : Q;");
  EXPECT_FALSE(flat.passed()) << describe(flat);
  // The control: the kernel as shipped, through the same edit path.
  const EvalResult same = run_edited(s, kbb, kbb);
  EXPECT_TRUE(same.passed()) << describe(same);
}

TEST(Conv2dNchw8cCli, SizesNotInBlocksOf8Exit2NamingTheSizeAndTheRule) {
  for (const char* named : {"C", "K"}) {
    const auto r = test::kforge_cli(std::string("verify conv2d_nchw8c --backend cpu --size ") + named + "=12");
    EXPECT_EQ(r.exit_code, 2) << named << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("size ") + named + "=12"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("multiple of 8"), std::string::npos) << r.err;
  }
  const auto xplain = test::kforge_cli("verify conv2d_nchw8c_xplain --backend cpu --size K=12");
  EXPECT_EQ(xplain.exit_code, 2) << xplain.err;
  EXPECT_NE(xplain.err.find("size K=12"), std::string::npos) << xplain.err;
  EXPECT_NE(xplain.err.find("multiple of 8"), std::string::npos) << xplain.err;
  const auto pad = test::kforge_cli("verify conv2d_nchw8c --backend cpu --size pad=-1");
  EXPECT_EQ(pad.exit_code, 2) << pad.err;
  EXPECT_NE(pad.err.find("pad"), std::string::npos) << pad.err;
}

}  // namespace
}  // namespace kforge
