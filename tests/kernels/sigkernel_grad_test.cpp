// sigkernel_grad: the double reference (the PDE scheme's adjoint, column by column) against
// central finite differences of sigkernel's own double reference, on x and on y; the cpu and
// opencl kernels passing thorough verification at odd shapes (paths of 2 points, unequal lengths, refinement,
// batches not a multiple of the SIMD width); wrong kernels rejected; bad sizes refused.
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

// L(X, Y) = sum_b GK_b k(x_b, y_b), k from sigkernel's reference (the diagonal of its Gram
// matrix). Central differences with h = 1e-5 err by O(h^2) (~1e-10 relative) plus ~1e-16 |L| / h:
// 1e-7 of the gradient's largest entry is honest and far below any wrong term.
TEST(SigKernelGrad, ReferenceMatchesFiniteDifferences) {
  const auto grad = find_problem("sigkernel_grad");
  const auto ker = find_problem("sigkernel");
  for (const Sizes& s : {Sizes{{"B", 2}, {"L1", 5}, {"L2", 3}, {"D", 3}, {"DYADIC", 0}},
                         Sizes{{"B", 1}, {"L1", 2}, {"L2", 4}, {"D", 2}, {"DYADIC", 2}},
                         Sizes{{"B", 2}, {"L1", 4}, {"L2", 2}, {"D", 1}, {"DYADIC", 1}}}) {
    Instance in = grad->make_instance(s, DType::fp32, Distribution::normal, 7, 0);
    std::vector<std::vector<double>> g, mag;
    grad->reference(in, g, mag);
    const std::int64_t B = s.at("B");
    const Sizes ks{{"B1", B}, {"B2", B}, {"L1", s.at("L1")}, {"L2", s.at("L2")}, {"D", s.at("D")}, {"DYADIC", s.at("DYADIC")}};
    Instance fw{ks, DType::fp32, {}, {in.tensors[0], in.tensors[1], std::vector<double>(B * B)}};
    auto loss = [&] {
      std::vector<std::vector<double>> o, m;
      ker->reference(fw, o, m);
      double l = 0;
      for (std::int64_t b = 0; b < B; ++b) l += in.tensors[2][b] * o[0][b * B + b];
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

class SigKernelGradBackends : public ::testing::TestWithParam<std::string> {};

TEST_P(SigKernelGradBackends, PassesAtOddShapes) {
  auto backend = make_backend(GetParam());
  if (!backend->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend->device();
  for (const Sizes& s : {Sizes{{"B", 3}, {"L1", 13}, {"L2", 7}, {"D", 3}, {"DYADIC", 0}},
                         Sizes{{"B", 17}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 1}},
                         Sizes{{"B", 2}, {"L1", 5}, {"L2", 9}, {"D", 2}, {"DYADIC", 2}}}) {
    const EvalResult r = evaluate(library_request("sigkernel_grad", GetParam(), s), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Library, SigKernelGradBackends, ::testing::Values("cpu", "opencl"),
                         [](const auto& info) { return info.param; });

EvalResult run_edited(const std::string& from, const std::string& to, const std::string& on = "cpu") {
  auto backend = make_backend(on);
  EvalRequest req = library_request("sigkernel_grad", on, {{"B", 5}, {"L1", 9}, {"L2", 6}, {"D", 3}, {"DYADIC", 1}});
  plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

TEST(SigKernelGrad, WrongKernelsAreRejected) {
  // The derivative of c1 without its a/6; the adjoint's diagonal neighbour added, not
  // subtracted; the start point's share dropped; the refinement's 1/4^λ left out of dk/dΔ.
  EXPECT_FALSE(run_edited("(0.5f + a * sixth)", "(0.5f)").passed());
  EXPECT_FALSE(run_edited("- next[(long long)(q + 1) * VB + v] * c2", "+ next[(long long)(q + 1) * VB + v] * c2").passed());
  EXPECT_FALSE(run_edited("(t < C1 ? gdx", "0.0f * (t < C1 ? gdx").passed());
  EXPECT_FALSE(run_edited("const vf g = ga[((long long)i * P + j) * VB + v] * scale", "const vf g = ga[((long long)i * P + j) * VB + v]").passed());
  const EvalResult ok = run_edited("VB", "VB");
  EXPECT_TRUE(ok.passed()) << describe(ok);
  // The opencl kernel's subtlest one, where it runs.
  if (make_backend("opencl")->can_run()) EXPECT_FALSE(run_edited("(0.5f + a * sixth)", "(0.5f)", "opencl").passed());
}

// Grids past the short kernels' private buffers (4096 nodes, rows of 256) go to the long-path
// GPU kernel, whose grid lives in the problem's scratch workspace W.
TEST(SigKernelGrad, LongPathsRunWithTheGridInTheWorkspace) {
  const auto p = find_problem("sigkernel_grad");
  ASSERT_EQ(p->tensors().size(), 6u);
  EXPECT_EQ(p->tensors()[5].role, Role::scratch);
  const Sizes small{{"B", 2}, {"L1", 3}, {"L2", 4}, {"D", 2}, {"DYADIC", 1}};  // grid 5 x 7, coarse 2 x 3
  EXPECT_EQ(p->tensor_elements(5, small), 2 * (5 * 7 + 3 * 4 + 2 * 8 + 4));
  const Sizes wide{{"B", 3}, {"L1", 70}, {"L2", 90}, {"D", 3}, {"DYADIC", 0}};  // 6300 nodes
  const Sizes lanky{{"B", 2}, {"L1", 5}, {"L2", 300}, {"D", 2}, {"DYADIC", 0}};  // rows of 300
  EXPECT_EQ(library_kernel(*p, Lang::opencl, wide).name, "sigkernel_grad.long.opencl");
  EXPECT_EQ(library_kernel(*p, Lang::opencl, lanky).name, "sigkernel_grad.long.opencl");
  EXPECT_EQ(library_kernel(*p, Lang::cuda, wide).name, "sigkernel_grad.long.cuda");
  EXPECT_EQ(library_kernel(*p, Lang::opencl, small).name, "sigkernel_grad.opencl");
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device";
  for (const Sizes& s : {wide, lanky}) {
    const EvalResult r = evaluate(library_request("sigkernel_grad", "opencl", s), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
  // A wrong version (the start point's share dropped) rejected too. (∂c1/∂a without a/6, the
  // subtlest, hides under the bound at this grid: the bound grows with the nodes.)
  EvalRequest req = library_request("sigkernel_grad", "opencl", wide);
  plant(req, "gx[ci * D + d] -= g * dy", "gx[ci * D + d] -= 0.0f * dy");
  req.verify.thorough = false;
  EXPECT_FALSE(evaluate(req, *backend).passed());
}

TEST(SigKernelGrad, BadSizesNameTheFix) {
  const auto p = find_problem("sigkernel_grad");
  EXPECT_NO_THROW(p->check_sizes({{"B", 1}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 0}}));
  EXPECT_THROW(p->check_sizes({{"B", 1}, {"L1", 1}, {"L2", 2}, {"D", 1}, {"DYADIC", 0}}), UsageError);
  EXPECT_THROW(p->check_sizes({{"B", 1}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 5}}), UsageError);
  // The stored grid: 2048 x 2048 nodes is past the 2^20 cap.
  EXPECT_THROW(p->check_sizes({{"B", 1}, {"L1", 1024}, {"L2", 1024}, {"D", 1}, {"DYADIC", 1}}), UsageError);
}

}  // namespace
}  // namespace kforge
