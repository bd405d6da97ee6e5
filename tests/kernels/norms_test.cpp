// softmax, rmsnorm and layernorm: the library's cpu and opencl kernels pass kforge's thorough
// verification at odd shapes (rows of 1 element, primes, one long row split across threads),
// for fp32, fp16 and bf16; kernels that are wrong in the usual ways (softmax without the max
// subtraction, variance as E[x^2] - E[x]^2) are caught; bad sizes exit 2 naming the size.
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

// (problem, backend)
class Norms : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
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

TEST_P(Norms, Fp32PassesAtOddShapes) {
  // Rows of one element: layernorm gives beta in every row, a constant the verifier rightly
  // refuses to judge by, so its one-element row is tested alone. Softmax gives 1 whatever the
  // inputs, which no instance can judge (its fuzzed shapes still run the kernel at 1x1).
  const std::string& problem = std::get<0>(GetParam());
  if (problem != "softmax") expect_passes({{"M", problem == "rmsnorm" ? 3 : 1}, {"N", 1}}, DType::fp32);
  expect_passes({{"M", 7}, {"N", 33}}, DType::fp32);
  expect_passes({{"M", 17}, {"N", 1031}}, DType::fp32);
}

TEST_P(Norms, OneLongRowPasses) { expect_passes({{"M", 1}, {"N", 100003}}, DType::fp32); }

TEST_P(Norms, SixteenBitTypesPass) {
  expect_passes({{"M", 5}, {"N", 127}}, DType::fp16);
  expect_passes({{"M", 5}, {"N", 127}}, DType::bf16);
}

INSTANTIATE_TEST_SUITE_P(
    Library, Norms,
    ::testing::Combine(::testing::Values("softmax", "rmsnorm", "layernorm"),
                       ::testing::Values("cpu", "opencl")),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

// One softmax row of a million elements, and rows of 200003 for the norms, shared by more
// blocks than cores (5 threads on any machine): the row barrier and the combination of partials.
TEST(NormsCpu, LongRowsSplitAcrossFiveThreads) {
  auto backend = make_backend("cpu", {.threads = 5});
  for (const char* problem : {"softmax", "rmsnorm", "layernorm"}) {
    const std::int64_t n = std::string(problem) == "softmax" ? 1 << 20 : 200003;
    EvalRequest req = library_request(problem, "cpu", {{"M", 2}, {"N", n}}, DType::fp32);
    req.verify.thorough = false;
    req.verify.trials = 1;
    req.backend_options.threads = 5;
    const EvalResult r = evaluate(req, *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

// The cpu kernels give each block a run of rows (an even share; softmax streams it as a
// software pipeline: row i+1 read while row i is computed and row i-1 written): blocks of
// several rows, uneven shares (67 rows over 16 blocks, 131 over 16 with ROWS 64), rows that
// are not whole vectors, and rows split across 16 threads with two rows per block (a row
// barrier per row of the run).
TEST(NormsCpu, RunsOfRowsPerBlockPass) {
  auto backend = make_backend("cpu");
  auto sixteen = make_backend("cpu", {.threads = 16});
  for (const char* problem : {"softmax", "rmsnorm", "layernorm"}) {
    auto run = [&](Backend& b, const Sizes& s, DType t, const ParamValues& params, int threads) {
      EvalRequest req = library_request(problem, "cpu", s, t, params);
      req.backend_options.threads = threads;
      const EvalResult r = evaluate(req, b);
      EXPECT_TRUE(r.passed()) << describe(r);
    };
    run(*backend, {{"M", 67}, {"N", 1031}}, DType::fp32, {}, 0);
    run(*backend, {{"M", 131}, {"N", 77}}, DType::fp32, {{"ROWS", 64}, {"ACC", 1}, {"PF", 0}, {"NT", 0}}, 0);
    run(*backend, {{"M", 67}, {"N", 250}}, DType::fp16, {{"ROWS", 8}, {"VW", 8}}, 0);
    run(*sixteen, {{"M", 20}, {"N", 40009}}, DType::fp32, {}, 16);
  }
}

// An outside cpu kernel (scalar, one row per block) with the given row body.
EvalResult run_candidate(const std::string& problem, const std::string& body) {
  const std::string src = std::string("#include <cmath>\n") + body;
  const auto p = find_problem(problem);
  const nlohmann::json spec = {{"name", problem + ".wrong"}, {"problem", problem},
                               {"lang", "cpp"},             {"entry", "wrong"},
                               {"grid", {"M", "1", "1"}},   {"block", {"1", "1", "1"}}};
  EvalRequest req = library_request(problem, "cpu", {{"M", 8}, {"N", 50}}, DType::fp32);
  req.kernel = KernelSpec::from_json_with_source(spec, src);
  auto backend = make_backend("cpu");
  return evaluate(req, *backend);
}

TEST(NormsCpu, SoftmaxWithoutTheMaxSubtractionIsCaught) {
  const EvalResult r = run_candidate("softmax", R"(
static void body(const kf_ctx& c, const float* X, float* Y, int M, int N) {
  const float* x = X + c.block_idx.x * N;
  float* y = Y + c.block_idx.x * N;
  float s = 0;
  for (int j = 0; j < N; ++j) s += std::exp(x[j]);
  for (int j = 0; j < N; ++j) y[j] = std::exp(x[j]) / s;
}
KF_KERNEL(wrong, body))");
  EXPECT_EQ(r.disposition, Disposition::incorrect) << describe(r);
}

TEST(NormsCpu, LayernormWithOnePassVarianceIsCaught) {
  const EvalResult r = run_candidate("layernorm", R"(
static void body(const kf_ctx& c, const float* X, const float* G, const float* B, float* Y,
                 int M, int N, float eps) {
  const float* x = X + c.block_idx.x * N;
  float* y = Y + c.block_idx.x * N;
  float s = 0, s2 = 0;
  for (int j = 0; j < N; ++j) s += x[j], s2 += x[j] * x[j];
  const float mean = s / N, var = s2 / N - mean * mean;
  const float inv = 1 / std::sqrt((var > 0 ? var : 0) + eps);
  for (int j = 0; j < N; ++j) y[j] = (x[j] - mean) * inv * G[j] + B[j];
}
KF_KERNEL(wrong, body))");
  EXPECT_EQ(r.disposition, Disposition::incorrect) << describe(r);
}

TEST(NormsCli, BadSizesExitTwoNamingTheSize) {
  for (const char* problem : {"softmax", "rmsnorm", "layernorm"}) {
    const auto r = test::kforge_cli(std::string("verify ") + problem + " --backend cpu --size M=4,N=0");
    EXPECT_EQ(r.exit_code, 2) << problem << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("N=0"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace kforge
