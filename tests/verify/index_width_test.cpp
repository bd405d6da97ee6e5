// The index_width check in the protocol (src/verify/verify.cpp): gemm's wide instance (A past
// 2^31 elements, zeros but its last rows) judged with stand-in kernels, so no 8 GiB run is made
// here. The real run, with the cpu backend's mapped buffer, is in wrong_kernels_test.cpp
// (int32_flat_index.cpp rejected, its 64-bit twin examples/naive_gemm.cpp passing).
#include <gtest/gtest.h>

#include <new>

#include "kforge/verify.hpp"

namespace kforge {
namespace {

const Sizes kShape{{"M", 9}, {"N", 7}, {"K", 5}};

// gemm in double on an instance held whole (the ordinary trials).
KernelOutput exact(const Instance& in) {
  const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N"), K = in.sizes.at("K");
  const double alpha = in.scalars.at("alpha"), beta = in.scalars.at("beta");
  std::vector<double> c(M * N);
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += in.tensors[0][i * K + k] * in.tensors[1][k * N + j];
      c[i * N + j] = alpha * s + (beta != 0 ? beta * in.tensors[2][i * N + j] : 0.0);
    }
  round_to(in.dtype, c);
  KernelOutput out;
  out.tensors = {c};
  out.unwritten = {std::vector<bool>(c.size(), false)};
  return out;
}

// The wide run as a kernel sees it: A is zeros but the live rows, so C is zeros then the live
// result. `wrap`: the last row reads row 0 of A instead (a 32-bit index that wrapped to a zero row).
KernelOutput wide_run(const Instance& live, const Sizes& wide, bool wrap) {
  KernelOutput small = exact(live);
  const std::int64_t N = wide.at("N"), rows = wide.at("M");
  std::vector<double> c(rows * N, 0.0);
  std::copy(small.tensors[0].begin(), small.tensors[0].end(), c.end() - small.tensors[0].size());
  if (wrap) std::fill(c.end() - N, c.end(), 0.0);
  KernelOutput out;
  out.tensors = {c};
  out.unwritten = {std::vector<bool>(c.size(), false)};
  return out;
}

struct WideVerdict {
  VerifyReport report;
  int wide_calls = 0;
  Sizes wide_sizes;
};

WideVerdict verify_with(const std::function<KernelOutput(const Instance&, const Sizes&, bool)>& wide, bool on = true) {
  WideVerdict r;
  VerifyOptions o;
  o.index_width = on;
  o.fuzz_shapes = 2;
  if (wide)
    o.call_wide = [&](const Instance& live, const Sizes& s, bool poison, bool) {
      ++r.wide_calls;
      r.wide_sizes = s;
      return wide(live, s, poison);
    };
  r.report = verify(*find_problem("gemm"), kShape, DType::fp32, [](const Instance& in, bool) { return exact(in); }, o);
  return r;
}

const CheckResult* find_check(const VerifyReport& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return &c;
  return nullptr;
}

TEST(IndexWidth, GemmDeclaresATensorPast2To31Elements) {
  const auto p = find_problem("gemm");
  const auto w = p->wide_index_shape(kShape);
  ASSERT_FALSE(w.sizes.empty());
  EXPECT_GT(p->tensor_elements(0, w.sizes), std::int64_t{1} << 31);
  EXPECT_LT(p->tensor_elements(0, w.live), std::int64_t{1} << 20) << "the live part stays small";
  EXPECT_EQ(p->tensor_elements(1, w.sizes), p->tensor_elements(1, w.live)) << "B does not grow";
  // The last live row starts at or past flat index 2^31: that is where a 32-bit index wraps.
  const std::int64_t K = w.sizes.at("K");
  EXPECT_GE((w.sizes.at("M") - 1) * K, std::int64_t{1} << 31);
  EXPECT_TRUE(find_problem("spmm")->wide_index_shape({}).sizes.empty()) << "undeclared: no check";
}

TEST(IndexWidth, ARightWideRunPassesAndAWrappedIndexFails) {
  const WideVerdict good = verify_with([](const Instance& l, const Sizes& s, bool) { return wide_run(l, s, false); });
  ASSERT_TRUE(good.report.passed) << good.report.failure;
  EXPECT_EQ(good.wide_calls, 1);
  EXPECT_EQ(good.wide_sizes.at("M"), (1 << 16) + 1);
  const CheckResult* c = find_check(good.report, "index_width");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->detail.rfind("passed at", 0), 0u) << c->detail;

  const WideVerdict bad = verify_with([](const Instance& l, const Sizes& s, bool) { return wide_run(l, s, true); });
  EXPECT_FALSE(bad.report.passed);
  EXPECT_EQ(bad.report.failed_check, "index_width") << bad.report.failure;
  EXPECT_EQ(bad.report.element_check, "bound");
  EXPECT_EQ(bad.report.failed_sizes.at("M"), (1 << 16) + 1);
  // Garbage in the zero rows fails too: their reference is exactly zero.
  const WideVerdict junk = verify_with([](const Instance& l, const Sizes& s, bool) {
    KernelOutput o = wide_run(l, s, false);
    o.tensors[0][5] = 1e-3;
    return o;
  });
  EXPECT_EQ(junk.report.failed_check, "index_width") << junk.report.failure;
}

TEST(IndexWidth, SkippedSayingWhatItNeedsAndOffOnRequest) {
  const WideVerdict short_of_memory = verify_with([](const Instance&, const Sizes&, bool) -> KernelOutput {
    throw std::bad_alloc();
  });
  ASSERT_TRUE(short_of_memory.report.passed) << short_of_memory.report.failure;
  const CheckResult* c = find_check(short_of_memory.report, "index_width");
  ASSERT_TRUE(c);
  EXPECT_NE(c->detail.find("skipped: needs 8.0 GiB"), std::string::npos) << c->detail;

  const WideVerdict no_backend = verify_with({});
  c = find_check(no_backend.report, "index_width");
  ASSERT_TRUE(c);
  EXPECT_NE(c->detail.find("which this backend cannot map"), std::string::npos) << c->detail;

  const WideVerdict off = verify_with([](const Instance& l, const Sizes& s, bool) { return wide_run(l, s, true); }, false);
  EXPECT_TRUE(off.report.passed);
  EXPECT_EQ(off.wide_calls, 0);
  EXPECT_EQ(find_check(off.report, "index_width"), nullptr);
}

}  // namespace
}  // namespace kforge
