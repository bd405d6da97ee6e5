// sigkernel_gram_grad: the double reference against central finite differences of sigkernel's
// own Gram reference (sum_{a,b} G_ab K_ab), and against the paired reference summed over every
// pair; the cpu and opencl kernels passing thorough verification at odd shapes (B1 != B2,
// L1 != L2, paths of 2 points, D = 1 and odd D, DYADIC 0..2); wrong kernels rejected (the
// weight G forgotten or transposed, the sum over the pairs dropped, ∂c1/∂a wrong); bad sizes refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using test::describe;
using test::library_request;
using test::plant;

// L(X, Y) = sum_{a,b} G_ab K_ab, K from sigkernel's double reference. Central differences with
// h = 1e-5 err by O(h^2) (~1e-10 relative) plus ~1e-16 |L| / h: 1e-7 of the gradient's largest
// entry is honest and far below any wrong term.
TEST(SigKernelGramGrad, ReferenceMatchesFiniteDifferences) {
  const auto grad = find_problem("sigkernel_gram_grad");
  const auto ker = find_problem("sigkernel");
  for (const Sizes& s : {Sizes{{"B1", 2}, {"B2", 3}, {"L1", 4}, {"L2", 3}, {"D", 3}, {"DYADIC", 0}},
                         Sizes{{"B1", 3}, {"B2", 1}, {"L1", 2}, {"L2", 5}, {"D", 1}, {"DYADIC", 1}},
                         Sizes{{"B1", 1}, {"B2", 2}, {"L1", 3}, {"L2", 2}, {"D", 2}, {"DYADIC", 2}}}) {
    Instance in = grad->make_instance(s, DType::fp32, Distribution::normal, 11, 0);
    std::vector<std::vector<double>> g, mag;
    grad->reference(in, g, mag);
    const std::int64_t B1 = s.at("B1"), B2 = s.at("B2");
    Instance fw{s, DType::fp32, {}, {in.tensors[0], in.tensors[1], std::vector<double>(B1 * B2)}};
    auto loss = [&] {
      std::vector<std::vector<double>> o, m;
      ker->reference(fw, o, m);
      double l = 0;
      for (std::int64_t e = 0; e < B1 * B2; ++e) l += in.tensors[2][e] * o[0][e];
      return l;
    };
    for (std::size_t t = 0; t < 2; ++t) {
      double scale = 0;
      for (double e : g[t]) scale = std::max(scale, std::fabs(e));
      ASSERT_GT(scale, 0);
      auto& x = fw.tensors[t];
      for (std::size_t k = 0; k < x.size(); ++k) {
        const double at = x[k], h = 1e-5;
        x[k] = at + h;
        const double up = loss();
        x[k] = at - h;
        const double down = loss();
        x[k] = at;
        EXPECT_NEAR((up - down) / (2 * h), g[t][k], 1e-7 * scale) << (t ? "GY" : "GX") << " entry " << k;
      }
    }
  }
}

// The Gram form is the paired form summed over every pair: the paired reference on the B1 B2
// pairs (x_a, y_b) with GK = G_ab, its gradients added into rows a and b.
TEST(SigKernelGramGrad, ReferenceIsThePairedReferenceSummedOverPairs) {
  const auto gram = find_problem("sigkernel_gram_grad");
  const auto paired = find_problem("sigkernel_grad");
  const std::int64_t B1 = 3, B2 = 2, L1 = 5, L2 = 4, D = 3;
  const Sizes s{{"B1", B1}, {"B2", B2}, {"L1", L1}, {"L2", L2}, {"D", D}, {"DYADIC", 1}};
  Instance in = gram->make_instance(s, DType::fp32, Distribution::uniform, 5, 0);
  std::vector<std::vector<double>> g, mag;
  gram->reference(in, g, mag);
  const Sizes ps{{"B", B1 * B2}, {"L1", L1}, {"L2", L2}, {"D", D}, {"DYADIC", 1}};
  Instance pin{ps, DType::fp32, {}, {{}, {}, in.tensors[2], {}, {}, {}}};
  for (std::int64_t a = 0; a < B1; ++a)
    for (std::int64_t b = 0; b < B2; ++b) {
      pin.tensors[0].insert(pin.tensors[0].end(), in.tensors[0].begin() + a * L1 * D, in.tensors[0].begin() + (a + 1) * L1 * D);
      pin.tensors[1].insert(pin.tensors[1].end(), in.tensors[1].begin() + b * L2 * D, in.tensors[1].begin() + (b + 1) * L2 * D);
    }
  std::vector<std::vector<double>> pg, pmag;
  paired->reference(pin, pg, pmag);
  std::vector<double> gx(B1 * L1 * D, 0.0), gy(B2 * L2 * D, 0.0);
  for (std::int64_t a = 0; a < B1; ++a)
    for (std::int64_t b = 0; b < B2; ++b) {
      for (std::int64_t e = 0; e < L1 * D; ++e) gx[a * L1 * D + e] += pg[0][(a * B2 + b) * L1 * D + e];
      for (std::int64_t e = 0; e < L2 * D; ++e) gy[b * L2 * D + e] += pg[1][(a * B2 + b) * L2 * D + e];
    }
  for (std::size_t e = 0; e < gx.size(); ++e) EXPECT_NEAR(g[0][e], gx[e], 1e-12) << "GX " << e;
  for (std::size_t e = 0; e < gy.size(); ++e) EXPECT_NEAR(g[1][e], gy[e], 1e-12) << "GY " << e;
}

class SigKernelGramGradBackends : public ::testing::TestWithParam<std::string> {};

TEST_P(SigKernelGramGradBackends, PassesAtOddShapes) {
  auto backend = make_backend(GetParam());
  if (!backend->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend->device();
  for (const Sizes& s : {Sizes{{"B1", 3}, {"B2", 10}, {"L1", 13}, {"L2", 7}, {"D", 3}, {"DYADIC", 0}},
                         Sizes{{"B1", 17}, {"B2", 2}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 1}},
                         Sizes{{"B1", 2}, {"B2", 5}, {"L1", 5}, {"L2", 9}, {"D", 5}, {"DYADIC", 2}}}) {
    const EvalResult r = evaluate(library_request("sigkernel_gram_grad", GetParam(), s), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Library, SigKernelGramGradBackends, ::testing::Values("cpu", "opencl"),
                         [](const auto& info) { return info.param; });

EvalResult run_edited(const std::string& from, const std::string& to, const std::string& on = "cpu") {
  auto backend = make_backend(on);
  EvalRequest req = library_request("sigkernel_gram_grad", on, {{"B1", 6}, {"B2", 5}, {"L1", 7}, {"L2", 6}, {"D", 3}, {"DYADIC", 1}});
  plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

// Each edit compiles a kernel afresh (~1 s quiet): split in three tests to keep each short.
TEST(SigKernelGramGrad, WrongWeightingIsRejected) {
  // The weight G forgotten (every pair weighted 1); G transposed on the GY side.
  EXPECT_FALSE(run_edited("? G[p * gp + q * gq] : 0.0f", "? 1.0f : 0.0f").passed());
  EXPECT_FALSE(run_edited("gram_side((blk - nx) * per, Y, X, G, 1, B2,", "gram_side((blk - nx) * per, Y, X, G, B2, 1,").passed());
  const EvalResult ok = run_edited("VB", "VB");
  EXPECT_TRUE(ok.passed()) << describe(ok);
}

TEST(SigKernelGramGrad, WrongSumsAreRejected) {
  // The sum over the other batch dropped (each row keeps only its last pair); ∂c1/∂a without
  // its a/6.
  EXPECT_FALSE(run_edited("gdp[((long long)i * D + d) * VB + v] += s * scale", "gdp[((long long)i * D + d) * VB + v] = s * scale").passed());
  EXPECT_FALSE(run_edited("(0.5f + a * sixth)", "(0.5f)").passed());
}

TEST(SigKernelGramGrad, WrongOpenclKernelsAreRejected) {
  if (!make_backend("opencl")->can_run()) GTEST_SKIP() << "no OpenCL device";
  // The weight forgotten; the sum over the other batch dropped.
  EXPECT_FALSE(run_edited("const float seed = G[p * gp + q * gq];", "const float seed = 1.0f;", "opencl").passed());
  EXPECT_FALSE(run_edited("gx[ci * D + d] += s * scale", "gx[ci * D + d] = s * scale", "opencl").passed());
}

TEST(SigKernelGramGrad, BadSizesNameTheFix) {
  const auto p = find_problem("sigkernel_gram_grad");
  EXPECT_NO_THROW(p->check_sizes({{"B1", 1}, {"B2", 3}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 0}}));
  EXPECT_THROW(p->check_sizes({{"B1", 1}, {"B2", 1}, {"L1", 2}, {"L2", 1}, {"D", 1}, {"DYADIC", 0}}), UsageError);
  EXPECT_THROW(p->check_sizes({{"B1", 1}, {"B2", 1}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 5}}), UsageError);
  EXPECT_THROW(p->check_sizes({{"B1", 1}, {"B2", 1}, {"L1", 1024}, {"L2", 1024}, {"D", 1}, {"DYADIC", 1}}), UsageError);
  EXPECT_EQ(p->tensor_elements(2, {{"B1", 3}, {"B2", 5}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 0}}), 15);
}

}  // namespace
}  // namespace kforge
