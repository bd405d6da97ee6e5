// activation.*: every function's cpu and opencl kernels pass kforge's thorough verification at
// odd shapes (one element, primes, one long row spread over many blocks), with and without the
// fused bias (the trials alternate), fp32 and the 16-bit types; an identity kernel fails ReLU.
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

// (function, backend)
class Activation : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    backend_ = make_backend(std::get<1>(GetParam()));
    if (!backend_->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend_->device();
  }
  void expect_passes(const Sizes& s, DType t) {
    const EvalResult r = evaluate(
        library_request("activation." + std::get<0>(GetParam()), std::get<1>(GetParam()), s, t), *backend_);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(Activation, PassesAtOddShapes) {
  expect_passes({{"M", 7}, {"N", 1}}, DType::fp32);  // rows of one element
  expect_passes({{"M", 1}, {"N", 70001}}, DType::fp32);  // many column tiles
  expect_passes({{"M", 3}, {"N", 101}}, DType::bf16);
}

INSTANTIATE_TEST_SUITE_P(
    Library, Activation,
    ::testing::Combine(::testing::Values("relu", "leaky_relu", "gelu_erf", "gelu_tanh", "silu"),
                       ::testing::Values("cpu", "opencl")),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

TEST(ActivationCpu, Fp16Passes) {
  auto backend = make_backend("cpu");
  for (const char* f : {"activation.gelu_erf", "activation.silu"}) {
    const EvalResult r = evaluate(library_request(f, "cpu", {{"M", 3}, {"N", 101}}, DType::fp16), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

// An identity kernel (y = x + bias) must never pass ReLU: the inputs always hold negatives.
TEST(ActivationCpu, IdentityFailsRelu) {
  const nlohmann::json spec = {{"name", "identity"}, {"problem", "activation.relu"},
                               {"lang", "cpp"},      {"entry", "identity"},
                               {"grid", {"M", "1", "1"}}, {"block", {"1", "1", "1"}}};
  const std::string src = R"(
static void body(const kf_ctx& c, const float* X, const float* B, float* Y, int M, int N,
                 float with_bias) {
  for (long long j = 0; j < N; ++j) {
    const long long e = c.block_idx.x * N + j;
    Y[e] = X[e] + (with_bias != 0 ? B[j] : 0.0f);
  }
}
KF_KERNEL(identity, body))";
  EvalRequest req = library_request("activation.relu", "cpu", {{"M", 8}, {"N", 50}}, DType::fp32);
  req.kernel = KernelSpec::from_json_with_source(spec, src);
  auto backend = make_backend("cpu");
  const EvalResult r = evaluate(req, *backend);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << describe(r);
}

TEST(ActivationCli, BadSizesExitTwoNamingTheSize) {
  const auto r = test::kforge_cli("verify activation.gelu_tanh --backend cpu --size M=-3");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("M=-3"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge
