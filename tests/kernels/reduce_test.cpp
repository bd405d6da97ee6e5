// reduce.*: sum, max and argmax along each axis, cpu and opencl kernels, pass kforge's thorough
// verification at odd shapes (a single row or column, primes, one long row or column shared
// across threads); argmax returns the first maximum (the integer inputs have many ties);
// argmax refuses a reduced length its fp32 indices cannot hold.
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

// (problem, backend)
class Reduce : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    backend_ = make_backend(std::get<1>(GetParam()));
    if (!backend_->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend_->device();
  }
  void expect_passes(const Sizes& s, DType t) {
    const EvalResult r = evaluate(library_request(std::get<0>(GetParam()), std::get<1>(GetParam()), s, t), *backend_);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(Reduce, PassesAtOddShapes) {
  expect_passes({{"M", 3}, {"N", 5}}, DType::fp32);
  expect_passes({{"M", 37}, {"N", 263}}, DType::fp32);
  // One long reduction (shared across threads on the cpu), and many short ones.
  const bool rows = std::get<0>(GetParam()).find("axis1") != std::string::npos;
  const std::int64_t length = 40009;
  expect_passes({{"M", rows ? 1 : length}, {"N", rows ? length : 1}}, DType::fp32);
  expect_passes({{"M", rows ? length : 2}, {"N", rows ? 2 : length}}, DType::fp32);
}

TEST_P(Reduce, SixteenBitTypesPass) {
  if (std::get<0>(GetParam()).find("argmax") != std::string::npos) GTEST_SKIP() << "argmax is fp32 only";
  expect_passes({{"M", 7}, {"N", 129}}, DType::bf16);
  expect_passes({{"M", 7}, {"N", 129}}, DType::fp16);
}

INSTANTIATE_TEST_SUITE_P(
    Library, Reduce,
    ::testing::Combine(::testing::Values("reduce.sum_axis1", "reduce.sum_axis0", "reduce.max_axis1",
                                         "reduce.max_axis0", "reduce.argmax_axis1",
                                         "reduce.argmax_axis0"),
                       ::testing::Values("cpu", "opencl")),
    [](const auto& info) {
      return std::get<0>(info.param).substr(7) + "_" + std::get<1>(info.param);
    });

// Integer inputs in [-8, 8]: every row and column has tied maxima, so only the first-index rule
// passes.
TEST(ReduceCpu, ArgmaxTakesTheFirstOfTiedMaxima) {
  auto backend = make_backend("cpu");
  for (const char* p : {"reduce.argmax_axis1", "reduce.argmax_axis0"}) {
    EvalRequest req = library_request(p, "cpu", {{"M", 300}, {"N", 300}}, DType::fp32);
    req.verify.distributions = {Distribution::integers};
    const EvalResult r = evaluate(req, *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

// argmax along rows by segments: a maximum that first appears in a later segment, later
// segments that only tie it (integers: they must not win), and segments that end mid-vector.
TEST(ReduceCpu, RowArgmaxBySegmentsKeepsTheFirstMaximum) {
  auto backend = make_backend("cpu");
  for (Distribution d : {Distribution::normal, Distribution::integers, Distribution::wide}) {
    EvalRequest req = library_request("reduce.argmax_axis1", "cpu", {{"M", 13}, {"N", 5003}}, DType::fp32,
                                      {{"SEG", 512}});
    req.verify.distributions = {d};
    const EvalResult r = evaluate(req, *backend);
    EXPECT_TRUE(r.passed()) << distribution_name(d) << ": " << describe(r);
  }
}

// One long row (column) shared by more blocks than cores: the barrier and the combination.
TEST(ReduceCpu, LongReductionSharedByFiveThreads) {
  auto backend = make_backend("cpu", {.threads = 5});
  for (const char* p : {"reduce.sum_axis1", "reduce.argmax_axis1", "reduce.max_axis0", "reduce.argmax_axis0"}) {
    const bool rows = std::string(p).find("axis1") != std::string::npos;
    EvalRequest req = library_request(p, "cpu", {{"M", rows ? 2 : 40009}, {"N", rows ? 40009 : 2}}, DType::fp32);
    req.verify.thorough = false;
    req.backend_options.threads = 5;
    const EvalResult r = evaluate(req, *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

// The axis-0 walk folds FOLD rows at a time (sum and max as a tree of loads) and the rest of
// the band row by row: rows not a multiple of any FOLD, a partial vector, 16-bit storage, and
// the fold and prefetch settings at their ends.
TEST(ReduceCpu, ColumnFoldsLeaveNoRowOrTypeBehind) {
  auto backend = make_backend("cpu");
  for (const char* p : {"reduce.sum_axis0", "reduce.max_axis0", "reduce.argmax_axis0"})
    for (const ParamValues& params : {ParamValues{}, ParamValues{{"FOLD", 16}, {"PF", 0}}, ParamValues{{"FOLD", 2}, {"PF", 2048}}})
      for (DType t : {DType::fp32, DType::bf16}) {
        if (t != DType::fp32 && std::string(p).find("argmax") != std::string::npos) continue;
        EvalRequest req = library_request(p, "cpu", {{"M", 67}, {"N", 131}}, t);
        req.params = params;
        req.verify.thorough = false;
        const EvalResult r = evaluate(req, *backend);
        EXPECT_TRUE(r.passed()) << p << " " << describe(r);
      }
  EvalRequest req = library_request("reduce.sum_axis0", "cpu", {{"M", 1031}, {"N", 17}}, DType::fp16);
  EXPECT_TRUE(evaluate(req, *backend).passed());
}

// A tile's rows in more ranges than threads (16 at M = 4099), combined by the last range to
// finish in row order: tied maxima in different ranges (integer inputs) keep the first; two
// column tiles shared at once, the second a partial one.
TEST(ReduceCpu, ColumnRangesCombineInRowOrder) {
  auto backend = make_backend("cpu");
  EvalRequest req = library_request("reduce.argmax_axis0", "cpu", {{"M", 4099}, {"N", 33}}, DType::fp32);
  req.verify.distributions = {Distribution::integers};
  req.verify.thorough = false;
  EvalResult r = evaluate(req, *backend);
  EXPECT_TRUE(r.passed()) << describe(r);
  for (const char* p : {"reduce.sum_axis0", "reduce.argmax_axis0"}) {
    req = library_request(p, "cpu", {{"M", 1031}, {"N", 20011}}, DType::fp32);
    req.verify.thorough = false;
    r = evaluate(req, *backend);
    EXPECT_TRUE(r.passed()) << p << " " << describe(r);
  }
}

TEST(ReduceCli, ArgmaxRefusesIndicesBeyondFp32) {
  const auto r = test::kforge_cli("verify reduce.argmax_axis1 --backend cpu --size M=1,N=16777217");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("N=16777217"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge
