// fusedmm (kernels/sparse/fusedmm_problem.hpp): its reference equals sddmm's followed by spmm's
// on the same pattern, its bound follows each row's nonzeros plus D, malformed inputs and bad
// scalars are refused naming them, and the cpu and opencl kernels pass the thorough protocol at
// odd shapes for every pattern and both ops (the trials alternate op 0 and op 1), including a
// 1x1 matrix, one nonzero, rows longer than a chunk and a fully dense matrix with N below a
// vector. OpenCL cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>
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

// fusedmm at op 0 is sddmm's sampled values fed to spmm as the sparse matrix's values.
TEST(SparseFusedmm, ReferenceIsSddmmThenSpmm) {
  const Sizes s{{"M", 23}, {"K", 19}, {"D", 7}, {"N", 5}, {"NNZ", 150}};
  for (const int pattern : {0, 1, 6}) {
    const auto fp = find_problem("fusedmm");
    const Instance f = fp->make_instance(s, DType::fp32, Distribution::normal, 5, 0, {{"pattern", pattern}, {"op", 0}});
    std::vector<std::vector<double>> fo, fm, so, sm, po, pm;
    fp->reference(f, fo, fm);
    Instance sd = find_problem("sddmm")->make_instance({{"M", 23}, {"K", 19}, {"D", 7}, {"NNZ", 150}}, DType::fp32,
                                                       Distribution::normal, 1, 0);
    sd.tensors = {f.tensors[0], f.tensors[1], f.tensors[2], f.tensors[3], {}};
    find_problem("sddmm")->reference(sd, so, sm);
    Instance sp = find_problem("spmm")->make_instance({{"M", 23}, {"K", 19}, {"N", 5}, {"NNZ", 150}}, DType::fp32,
                                                      Distribution::normal, 1, 0);
    sp.tensors = {f.tensors[0], f.tensors[1], so[0], f.tensors[4], {}};
    find_problem("spmm")->reference(sp, po, pm);
    ASSERT_EQ(fo[0].size(), po[0].size());
    double largest = 0;
    for (std::size_t i = 0; i < fo[0].size(); ++i) {
      EXPECT_NEAR(fo[0][i], po[0][i], 1e-9 * (1 + std::fabs(po[0][i]))) << "pattern " << pattern << " element " << i;
      largest = std::max(largest, std::fabs(fo[0][i]));
    }
    EXPECT_GT(largest, 0) << "pattern " << pattern;
  }
}

TEST(SparseFusedmm, SigmoidAndBoundPerRow) {
  const auto p = find_problem("fusedmm");
  const Sizes s{{"M", 30}, {"K", 200}, {"D", 9}, {"N", 4}, {"NNZ", 500}};
  const Instance in = p->make_instance(s, DType::fp32, Distribution::normal, 3, 2, {{"op", 1}});  // power-law rows
  std::vector<std::vector<double>> out, mag;
  p->reference(in, out, mag);
  // Each row's column 1, summed here independently: sigmoid(x . y) * z over the row's nonzeros.
  const auto& rp = in.tensors[0];
  for (std::int64_t r = 0; r < 30; ++r) {
    double want = 0;
    for (auto q = static_cast<std::int64_t>(rp[r]); q < rp[r + 1]; ++q) {
      const auto c = static_cast<std::int64_t>(in.tensors[1][q]);
      double dot = 0;
      for (int d = 0; d < 9; ++d) dot += in.tensors[2][r * 9 + d] * in.tensors[3][c * 9 + d];
      want += in.tensors[4][c * 4 + 1] / (1 + std::exp(-dot));
    }
    EXPECT_NEAR(out[0][r * 4 + 1], want, 1e-12 * (1 + std::fabs(want))) << "row " << r;
  }
  const auto n = p->reduction_lengths(in);
  for (std::int64_t r = 0; r < 30; ++r) EXPECT_EQ(n[0][r * 4 + 3], std::max(1.0, rp[r + 1] - rp[r] + 9 + 10));
}

TEST(SparseFusedmm, MalformedInputsAndBadScalarsAreRefused) {
  const auto p = find_problem("fusedmm");
  Instance in = p->make_instance({{"M", 5}, {"K", 6}, {"D", 3}, {"N", 2}, {"NNZ", 12}}, DType::fp32,
                                 Distribution::normal, 3, 1);
  std::vector<std::vector<double>> out, mag;
  Instance bad = in;
  bad.tensors[1][4] = 6;
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("fusedmm: col_idx[4]=6"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)p->resolve_scalars({{"op", 2}}); }).find("scalar op=2"), std::string::npos);
  const auto r = test::kforge_cli("verify fusedmm --backend cpu --scalar op=0.5");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("scalar op=0.5"), std::string::npos) << r.err;
}

struct Case {
  std::int64_t M, K, D, N, NNZ;
  ParamValues params;
};

void expect_passes(Backend& backend, const Case& c, int pattern = -1) {
  EvalRequest req = test::library_request(
      "fusedmm", backend.name(), {{"M", c.M}, {"K", c.K}, {"D", c.D}, {"N", c.N}, {"NNZ", c.NNZ}}, DType::fp32, c.params);
  if (pattern >= 0) req.scalars = req.verify.scalars = {{"pattern", pattern}};
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.passed()) << "pattern " << pattern << ": " << test::describe(r);
}

TEST(SparseFusedmmCpu, PassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  // chunks of 8 (rows longer than a chunk load, add and store), columns with vector and scalar tails
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {37, 53, 19, 45, 400, {{"CH", 8}, {"NV", 1}, {"VW", 8}, {"RBLOCKS", 5}}}, pattern);
  expect_passes(*backend, {1, 1, 1, 1, 1, {}});                          // a 1x1 matrix
  expect_passes(*backend, {29, 31, 33, 70, 1, {}});                      // one nonzero
  expect_passes(*backend, {13, 17, 5, 3, 2000, {{"RBLOCKS", 64}}});      // fully dense, N below a vector
  expect_passes(*backend, {131, 97, 64, 130, 3000, {}});                 // defaults
}

TEST(SparseFusedmmOpenCl, PassesEveryPattern) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {37, 53, 19, 45, 400, {{"WX", 8}, {"CPT", 2}}}, pattern);
  expect_passes(*backend, {1, 1, 1, 1, 1, {}});
  expect_passes(*backend, {13, 17, 5, 3, 2000, {}});
}

}  // namespace
}  // namespace kforge
