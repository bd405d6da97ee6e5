// signature_grad: the double reference (the backward pass recomputing prefixes by exp(-Δ))
// against central finite differences of the signature's own double reference; the cpu and
// opencl kernels passing thorough verification at odd shapes (the opencl one keeps its levels in
// the problem's scratch workspace W); wrong kernels rejected.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using test::describe;
using test::library_request;

// L(X) = <GS, signature(X)> by the signature problem's reference; central differences with
// h = 1e-5 err by O(h^2) relative (~1e-10) plus ~1e-16 |L| / h: 1e-7 of the gradient's largest
// entry is honest and far below any wrong term.
TEST(SignatureGrad, ReferenceMatchesFiniteDifferences) {
  const auto grad = find_problem("signature_grad");
  const auto sig = find_problem("signature");
  for (const Sizes& s : {Sizes{{"B", 2}, {"L", 5}, {"D", 3}, {"LEVEL", 4}}, Sizes{{"B", 1}, {"L", 4}, {"D", 2}, {"LEVEL", 6}},
                         Sizes{{"B", 2}, {"L", 3}, {"D", 4}, {"LEVEL", 1}}}) {
    Instance in = grad->make_instance(s, DType::fp32, Distribution::normal, 11, 0);
    std::vector<std::vector<double>> g, mag;
    grad->reference(in, g, mag);
    Instance fw{s, DType::fp32, {}, {in.tensors[0], std::vector<double>(in.tensors[1].size())}};
    auto loss = [&] {
      std::vector<std::vector<double>> o, m;
      sig->reference(fw, o, m);
      double l = 0;
      for (std::size_t e = 0; e < o[0].size(); ++e) l += in.tensors[1][e] * o[0][e];
      return l;
    };
    double scale = 0;
    for (double e : g[0]) scale = std::max(scale, std::fabs(e));
    ASSERT_GT(scale, 0);
    auto& x = fw.tensors[0];
    for (std::size_t k = 0; k < x.size(); ++k) {
      const double at = x[k], h = 1e-5;
      x[k] = at + h;
      const double up = loss();
      x[k] = at - h;
      const double down = loss();
      x[k] = at;
      EXPECT_NEAR((up - down) / (2 * h), g[0][k], 1e-7 * scale) << "entry " << k << " LEVEL " << s.at("LEVEL");
    }
  }
}

TEST(SignatureGrad, CpuPassesAtOddShapes) {
  auto backend = make_backend("cpu");
  for (const Sizes& s : {Sizes{{"B", 3}, {"L", 37}, {"D", 3}, {"LEVEL", 4}}, Sizes{{"B", 2}, {"L", 17}, {"D", 2}, {"LEVEL", 6}},
                         Sizes{{"B", 5}, {"L", 2}, {"D", 5}, {"LEVEL", 1}}, Sizes{{"B", 17}, {"L", 3}, {"D", 21}, {"LEVEL", 2}}}) {
    const EvalResult r = evaluate(library_request("signature_grad", "cpu", s), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

// The one-path-at-a-time variant (BATCHED=0: the library's choice for large D^LEVEL) and the
// batched one with B not a multiple of the lanes (VW=8: 19 paths are 2 full vectors and 3 lanes
// of a third, PATHS=2 putting 16 paths in a block). Two compiled variants, for the test's time.
TEST(SignatureGrad, CpuVariantsPassAtOddShapes) {
  auto backend = make_backend("cpu");
  const ParamValues one_path{{"BATCHED", 0}, {"PATHS", 2}}, lanes{{"BATCHED", 1}, {"VW", 8}, {"PATHS", 2}};
  const std::vector<std::pair<Sizes, ParamValues>> cases = {
      {Sizes{{"B", 3}, {"L", 17}, {"D", 3}, {"LEVEL", 4}}, one_path},
      {Sizes{{"B", 2}, {"L", 5}, {"D", 9}, {"LEVEL", 3}}, one_path},
      {Sizes{{"B", 19}, {"L", 13}, {"D", 3}, {"LEVEL", 5}}, lanes},
      {Sizes{{"B", 5}, {"L", 97}, {"D", 1}, {"LEVEL", 6}}, lanes}};
  for (const auto& [s, params] : cases) {
    const EvalResult r = evaluate(library_request("signature_grad", "cpu", s, DType::fp32, params), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

TEST(SignatureGrad, OpenclPassesAtOddShapes) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device";
  for (const Sizes& s : {Sizes{{"B", 3}, {"L", 37}, {"D", 3}, {"LEVEL", 4}}, Sizes{{"B", 2}, {"L", 17}, {"D", 2}, {"LEVEL", 6}},
                         Sizes{{"B", 5}, {"L", 2}, {"D", 5}, {"LEVEL", 1}}, Sizes{{"B", 2}, {"L", 9}, {"D", 21}, {"LEVEL", 2}}}) {
    const EvalResult r = evaluate(library_request("signature_grad", "opencl", s), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

TEST(SignatureGrad, TheWorkspaceIsAScratchTensorOutsideTheFewestBytes) {
  const auto p = find_problem("signature_grad");
  const Sizes s{{"B", 3}, {"L", 7}, {"D", 2}, {"LEVEL", 3}};
  ASSERT_EQ(p->tensors().size(), 4u);
  EXPECT_EQ(p->tensors()[3].role, Role::scratch);
  EXPECT_EQ(p->tensor_elements(3, s), 3 * 5 * (2 + 4 + 8 + 1));
  EXPECT_DOUBLE_EQ(p->bytes(s, DType::fp32), (2.0 * 3 * 7 * 2 + 3 * 14) * 4);
}

EvalResult run_edited(const std::string& from, const std::string& to, const std::string& backend_name = "cpu") {
  auto backend = make_backend(backend_name);
  EvalRequest req = library_request("signature_grad", backend_name, {{"B", 3}, {"L", 19}, {"D", 3}, {"LEVEL", 3}});
  test::plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

TEST(SignatureGrad, WrongKernelsAreRejected) {
  // Prefixes recovered with exp(+Δ) instead of exp(-Δ); the start point's share not subtracted;
  // the transposed Horner chain without its 1/(k-m) in adj Δ, or not adding into adj A^m.
  EXPECT_FALSE(run_edited("nm[(m - 1) * D + i] = -dm", "nm[(m - 1) * D + i] = dm").passed());
  EXPECT_FALSE(run_edited("gx[(t - 1) * D + i] -= d", "gx[(t - 1) * D + i] += 0.0f * d").passed());
  EXPECT_FALSE(run_edited("const float w = inv[k - m];", "const float w = 1.0f;").passed());
  EXPECT_FALSE(run_edited("g[u] += q[u];", "g[u] += 0.0f * q[u];").passed());
  const EvalResult ok = run_edited("PATHS", "PATHS");
  EXPECT_TRUE(ok.passed()) << describe(ok);
  if (!make_backend("opencl")->can_run()) return;
  // opencl: the start point's share dropped; exp's adjoint without its 1/m; the prefix read from
  // the workspace without being set first (the scratch tensor's poison reaches GX).
  EXPECT_FALSE(run_edited("gx[(long)(t - 1) * D + i] -= gd;", "gx[(long)(t - 1) * D + i] += 0.0f;", "opencl").passed());
  EXPECT_FALSE(run_edited("gE[off[m - 1] + p] += s * kInv[m];", "gE[off[m - 1] + p] += s;", "opencl").passed());
  EXPECT_FALSE(run_edited("S[e] = e == 0 ? 1.0f : 0.0f,", "S[e] += e == 0 ? 1.0f : 0.0f,", "opencl").passed());
  const EvalResult ok_cl = run_edited("WG", "WG", "opencl");
  EXPECT_TRUE(ok_cl.passed()) << describe(ok_cl);
}

}  // namespace
}  // namespace kforge
