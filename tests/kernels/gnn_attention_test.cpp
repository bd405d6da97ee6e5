// gnn_attention (kernels/sparse/gnn_attention_problem.hpp): its reference against the dense
// masked-softmax formula for every pattern and both trial scales, and the cpu and opencl
// kernels passing the thorough protocol at odd shapes for every pattern (a 1x1 graph, empty
// rows, a fully dense graph included); an online softmax that forgets to rescale its sum when
// the maximum grows is rejected. OpenCL cases skip themselves without an OpenCL device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/sparse.hpp"
#include "kernels/family_test.hpp"

namespace kforge {
namespace {

TEST(SparseGnnAttention, ReferenceMatchesTheDenseMaskedSoftmax) {
  const auto p = find_problem("gnn_attention");
  const std::int64_t M = 23, D = 5, N = 3;
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    for (const double scale : {0.125, 0.375}) {
      const Instance in = p->make_instance({{"M", M}, {"D", D}, {"N", N}, {"NNZ", 120}}, DType::fp32,
                                           Distribution::normal, 4, 0, {{"pattern", pattern}, {"scale", scale}});
      const auto &rp = in.tensors[0], &ci = in.tensors[1], &Q = in.tensors[2], &K = in.tensors[3],
                 &V = in.tensors[4];
      std::vector<std::vector<double>> out, mag;
      p->reference(in, out, mag);
      for (std::int64_t r = 0; r < M; ++r) {
        // the dense scores, -inf off the pattern, then a plain softmax
        std::vector<double> s(M, -std::numeric_limits<double>::infinity());
        for (auto q = static_cast<std::int64_t>(rp[r]); q < rp[r + 1]; ++q) {
          const auto c = static_cast<std::int64_t>(ci[q]);
          s[c] = 0;
          for (std::int64_t d = 0; d < D; ++d) s[c] += scale * Q[r * D + d] * K[c * D + d];
        }
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (double v : s) mx = std::max(mx, v);
        for (double v : s) sum += std::isinf(v) ? 0 : std::exp(v - mx);
        for (std::int64_t j = 0; j < N; ++j) {
          double want = 0;
          for (std::int64_t c = 0; c < M; ++c)
            if (!std::isinf(s[c])) want += std::exp(s[c] - mx) / sum * V[c * N + j];
          EXPECT_NEAR(out[0][r * N + j], want, 1e-12 * (1 + std::fabs(want)))
              << "pattern " << pattern << " scale " << scale << " row " << r;
          if (rp[r + 1] == rp[r]) EXPECT_EQ(mag[0][r * N + j], 0.0) << "a row without edges must be exactly 0";
        }
      }
    }
}

struct Case {
  std::int64_t M, D, N, NNZ;
  ParamValues params;
};

EvalResult evaluate_case(Backend& backend, const Case& c, int pattern = -1, const std::string& source = "") {
  EvalRequest req = test::library_request("gnn_attention", backend.name(),
                                          {{"M", c.M}, {"D", c.D}, {"N", c.N}, {"NNZ", c.NNZ}}, DType::fp32, c.params);
  if (pattern >= 0) req.scalars = req.verify.scalars = {{"pattern", pattern}};
  if (!source.empty()) req.kernel.source = source;
  return evaluate(req, backend);
}

void expect_passes(Backend& backend, const Case& c, int pattern = -1) {
  const EvalResult r = evaluate_case(backend, c, pattern);
  EXPECT_TRUE(r.passed()) << "pattern " << pattern << ": " << test::describe(r);
}

TEST(SparseGnnAttentionCpu, PassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {53, 7, 45, 400, {{"BN", 32}, {"RBLOCKS", 5}}}, pattern);
  expect_passes(*backend, {1, 1, 1, 1, {}});                  // a 1x1 graph, one self edge
  expect_passes(*backend, {17, 3, 3, 289, {{"RBLOCKS", 64}}});  // every edge
  expect_passes(*backend, {151, 7, 45, 15000, {}});             // rows of about 100 edges: two chunks
}

// The classic slip of an online softmax: the accumulator is rescaled when the maximum grows,
// the running sum is not. Rows whose maximum is not in their first chunk of edges then come
// out wrong (the cpu kernel takes 64 edges a chunk: rows of about 100 edges here).
TEST(SparseGnnAttentionCpu, ASumNotRescaledIsRejected) {
  auto backend = make_backend("cpu");
  const auto p = find_problem("gnn_attention");
  std::string source = library_kernel(*p, Lang::cpp, p->default_sizes()).source;
  const std::string rescale = "        sum *= f;\n";
  const auto at = source.find(rescale);
  ASSERT_NE(at, std::string::npos) << "the kernel's rescaling line moved: update this test";
  source.erase(at, rescale.size());
  const EvalResult r = evaluate_case(*backend, {151, 7, 45, 15000, {}}, -1, source);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << test::describe(r);
}

TEST(SparseGnnAttentionOpenCl, PassesEveryPattern) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {53, 7, 45, 400, {{"WX", 8}, {"CPT", 2}, {"WY", 3}}}, pattern);
  expect_passes(*backend, {1, 1, 1, 1, {}});
  expect_passes(*backend, {17, 3, 3, 289, {}});
}

}  // namespace
}  // namespace kforge
