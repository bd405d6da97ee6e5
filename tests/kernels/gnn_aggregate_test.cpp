// gnn_aggregate (kernels/sparse/gnn_problem.hpp): its reference against the dense matrix
// formulas (GCN: D^-1/2 (A + I) D^-1/2 H with d = 1 + row length; mean: diag(1/len) A H) for
// every pattern, bad `kind` values and malformed structures refused, and the cpu and opencl
// kernels passing the thorough protocol at odd shapes for every pattern and both kinds (the
// trials alternate them), including a 1x1 graph, empty rows and a fully dense graph. OpenCL
// cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/sparse.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SparseGnn, ReferenceMatchesTheDenseFormulas) {
  const auto p = find_problem("gnn_aggregate");
  const std::int64_t M = 29, N = 3;
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    for (const double kind : {0.0, 1.0}) {
      const Instance in = p->make_instance({{"M", M}, {"N", N}, {"NNZ", 150}}, DType::fp32, Distribution::normal, 4,
                                           0, {{"pattern", pattern}, {"kind", kind}});
      const auto &rp = in.tensors[0], &ci = in.tensors[1], &H = in.tensors[2];
      std::vector<double> a(M * M, 0.0), len(M);
      for (std::int64_t r = 0; r < M; ++r) {
        len[r] = rp[r + 1] - rp[r];
        for (auto q = static_cast<std::int64_t>(rp[r]); q < rp[r + 1]; ++q) a[r * M + static_cast<std::int64_t>(ci[q])] += 1;
      }
      std::vector<std::vector<double>> out, mag;
      p->reference(in, out, mag);
      for (std::int64_t r = 0; r < M; ++r)
        for (std::int64_t j = 0; j < N; ++j) {
          double want = 0;
          for (std::int64_t c = 0; c < M; ++c) {
            const double arc = a[r * M + c] + (kind == 0 && c == r ? 1 : 0);  // A + I for GCN
            if (arc == 0) continue;
            want += kind == 0 ? arc * H[c * N + j] / std::sqrt((1 + len[r]) * (1 + len[c])) : arc * H[c * N + j] / len[r];
          }
          EXPECT_NEAR(out[0][r * N + j], want, 1e-12 * (1 + std::fabs(want)))
              << "pattern " << pattern << " kind " << kind << " row " << r;
        }
    }
}

TEST(SparseGnn, BadKindAndMalformedInputsAreRefused) {
  const auto p = find_problem("gnn_aggregate");
  EXPECT_NE(error_of([&] { (void)p->resolve_scalars({{"kind", 3}}); }).find("scalar kind=3"), std::string::npos);
  Instance in = p->make_instance({{"M", 6}, {"N", 2}, {"NNZ", 12}}, DType::fp32, Distribution::normal, 3, 1);
  std::vector<std::vector<double>> out, mag;
  in.tensors[1][5] = 6;  // a node that is not there
  EXPECT_NE(error_of([&] { p->reference(in, out, mag); }).find("gnn_aggregate: col_idx[5]=6"), std::string::npos);
  const auto r = test::kforge_cli("verify gnn_aggregate --backend cpu --scalar kind=0.5");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("scalar kind=0.5"), std::string::npos) << r.err;
}

struct Case {
  std::int64_t M, N, NNZ;
  ParamValues params;
};

void expect_passes(Backend& backend, const Case& c, int pattern = -1) {
  EvalRequest req = test::library_request("gnn_aggregate", backend.name(), {{"M", c.M}, {"N", c.N}, {"NNZ", c.NNZ}},
                                          DType::fp32, c.params);
  if (pattern >= 0) req.scalars = req.verify.scalars = {{"pattern", pattern}};
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.passed()) << "pattern " << pattern << ": " << test::describe(r);
}

TEST(SparseGnnCpu, PassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {53, 45, 400, {{"BN", 32}, {"NV", 1}, {"VW", 8}, {"RBLOCKS", 5}}}, pattern);
  expect_passes(*backend, {1, 1, 1, {}});                       // a 1x1 graph, one self edge
  expect_passes(*backend, {17, 3, 289, {{"RBLOCKS", 64}}});     // every edge, N below a vector
}

TEST(SparseGnnOpenCl, PassesEveryPattern) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {53, 45, 400, {{"WX", 8}, {"CPT", 2}, {"WY", 3}}}, pattern);
  expect_passes(*backend, {1, 1, 1, {}});
  expect_passes(*backend, {17, 3, 289, {}});
}

}  // namespace
}  // namespace kforge
