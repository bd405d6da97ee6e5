// The sparse family (kernels/sparse/, include/kforge/sparse.hpp): formats and conversions,
// every generator's structure, malformed structures refused naming the index, the per-row
// error bound, and spmm / sddmm passing the thorough protocol at odd shapes on cpu and opencl
// for every pattern, including a 1x1 matrix, one nonzero, empty rows and a fully dense row.
// OpenCL cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>
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

using sparse::Pattern;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SparseFormat, CooToCsrSortsAndRoundTrips) {
  sparse::Coo a{3, 4, {2, 0, 2, 0}, {1, 3, 0, 0}, {1.5, 2.5, -1, 4}};
  const sparse::Csr c = sparse::to_csr(a);
  EXPECT_EQ(c.row_ptr, (std::vector<std::int64_t>{0, 2, 2, 4}));
  EXPECT_EQ(c.col_idx, (std::vector<std::int64_t>{0, 3, 0, 1}));
  EXPECT_EQ(c.values, (std::vector<double>{4, 2.5, -1, 1.5}));
  const auto d = sparse::to_dense(c);
  EXPECT_EQ(d[0 * 4 + 3], 2.5);
  EXPECT_EQ(d[2 * 4 + 1], 1.5);
  const sparse::Csr back = sparse::to_csr(sparse::to_coo(c));
  EXPECT_EQ(back.row_ptr, c.row_ptr);
  EXPECT_EQ(back.col_idx, c.col_idx);
  EXPECT_EQ(back.values, c.values);
}

TEST(SparseFormat, DuplicatesAndOutOfRangeAreRefusedByName) {
  const std::string dup = error_of([] { (void)sparse::to_csr({2, 2, {1, 0, 1}, {1, 0, 1}, {1, 2, 3}}); });
  EXPECT_NE(dup.find("entries 0 and 2 are both at (1, 1)"), std::string::npos) << dup;
  const std::string out = error_of([] { (void)sparse::to_csr({2, 2, {0, 2}, {0, 0}, {1, 2}}); });
  EXPECT_NE(out.find("COO entry 1 at (2, 0)"), std::string::npos) << out;
}

TEST(SparseFormat, ValidatorNamesTheIndex) {
  const double rp_dec[] = {0, 2, 1, 3}, rp[] = {0, 2, 2, 4}, rp_over[] = {0, 2, 2, 9};
  const double ci[] = {0, 1, 3, 2}, ci_range[] = {0, 1, 5, 2}, ci_dup[] = {0, 1, 2, 2}, ci_frac[] = {0, 0.5, 1, 2};
  auto check = [](const double* r, const double* c) {
    return error_of([&] { sparse::validate_csr("spmm", r, c, 3, 4, 4); });
  };
  EXPECT_EQ(check(rp, ci), "(no error)");
  EXPECT_NE(check(rp_dec, ci).find("row_ptr[2]=1 is less than row_ptr[1]=2"), std::string::npos) << check(rp_dec, ci);
  EXPECT_NE(check(rp_over, ci).find("row_ptr[3]=9 exceeds NNZ=4"), std::string::npos) << check(rp_over, ci);
  EXPECT_NE(check(rp, ci_range).find("col_idx[2]=5"), std::string::npos) << check(rp, ci_range);
  EXPECT_NE(check(rp, ci_frac).find("col_idx[1]=0.5"), std::string::npos) << check(rp, ci_frac);
  EXPECT_NE(check(rp, ci_dup).find("row 2 holds column 2 twice"), std::string::npos) << check(rp, ci_dup);
}

TEST(SparseGenerate, EveryPatternHoldsItsCountAndShape) {
  const std::int64_t M = 61, K = 47;
  for (int pi = 0; pi < sparse::kPatternCount; ++pi) {
    const auto p = static_cast<Pattern>(pi);
    for (const std::int64_t nnz : {0L, 1L, 50L, 700L, M * K, M * K + 5}) {
      const sparse::Csr a = sparse::generate(p, M, K, nnz, 42 + nnz);
      SCOPED_TRACE(std::string(sparse::pattern_name(p)) + " nnz=" + std::to_string(nnz));
      const std::int64_t allowed = p == Pattern::empty_rows_cols ? (M / 2) * ((K + 1) / 2) : M * K;
      ASSERT_EQ(a.nnz(), std::min(nnz, allowed));
      std::vector<double> rp(a.row_ptr.begin(), a.row_ptr.end()), ci(a.col_idx.begin(), a.col_idx.end());
      ci.push_back(0);  // validate_csr reads nothing past row_ptr[M]; keep the pointer valid at nnz 0
      EXPECT_EQ(error_of([&] { sparse::validate_csr("gen", rp.data(), ci.data(), M, K, a.nnz()); }), "(no error)");
      for (std::int64_t r = 0; r < M; ++r) {
        const std::int64_t len = a.row_ptr[r + 1] - a.row_ptr[r];
        if (p == Pattern::empty_rows_cols && r % 2 == 0) EXPECT_EQ(len, 0) << "row " << r;
        if (p == Pattern::banded && len > 0)
          EXPECT_EQ(a.col_idx[a.row_ptr[r + 1] - 1] - a.col_idx[a.row_ptr[r]], len - 1) << "row " << r;
      }
      if (p == Pattern::empty_rows_cols)
        for (const auto c : a.col_idx) EXPECT_EQ(c % 2, 0);
      if (p == Pattern::dense_row && nnz >= K) EXPECT_EQ(a.row_ptr[M / 2 + 1] - a.row_ptr[M / 2], K);
    }
  }
  // Power-law rows are skewed: the longest is several times the mean.
  const sparse::Csr pl = sparse::generate(Pattern::power_law, 400, 400, 8000, 7);
  std::int64_t longest = 0;
  for (std::int64_t r = 0; r < 400; ++r) longest = std::max(longest, pl.row_ptr[r + 1] - pl.row_ptr[r]);
  EXPECT_GT(longest, 5 * 8000 / 400);
  // Same seed, same pattern; another seed, another.
  EXPECT_EQ(sparse::generate(Pattern::uniform, 30, 30, 100, 1).col_idx,
            sparse::generate(Pattern::uniform, 30, 30, 100, 1).col_idx);
  EXPECT_NE(sparse::generate(Pattern::uniform, 30, 30, 100, 1).col_idx,
            sparse::generate(Pattern::uniform, 30, 30, 100, 2).col_idx);
}

TEST(SparseProblem, MalformedInputsAreRefusedNamingTheIndex) {
  const auto p = find_problem("spmm");
  Instance in = p->make_instance({{"M", 5}, {"K", 6}, {"N", 3}, {"NNZ", 12}}, DType::fp32, Distribution::normal, 3, 1);
  std::vector<std::vector<double>> out, mag;
  Instance bad = in;
  bad.tensors[0][3] = bad.tensors[0][2] - 1;  // row_ptr decreases
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("row_ptr[3]="), std::string::npos);
  bad = in;
  bad.tensors[1][4] = 6;  // column out of range
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("col_idx[4]=6"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)p->resolve_scalars({{"pattern", 7}}); }).find("scalar pattern=7"), std::string::npos);
}

TEST(SparseProblem, BoundFollowsEachRowsNonzeros) {
  const auto p = find_problem("spmm");
  const Instance in = p->make_instance({{"M", 40}, {"K", 300}, {"N", 5}, {"NNZ", 600}}, DType::fp32,
                                       Distribution::normal, 9, 2);  // trial 2: power-law rows
  const auto n = p->reduction_lengths(in);
  ASSERT_EQ(n.size(), 1u);
  for (std::int64_t r = 0; r < 40; ++r)
    EXPECT_EQ(n[0][r * 5 + 4], std::max(1.0, in.tensors[0][r + 1] - in.tensors[0][r]));
  // A row of few nonzeros gets a bound far tighter than K terms would give.
  const ErrorBound bound(*p, in);
  EXPECT_LT(bound(1.0, 1.0, 3.0), bound(1.0, 1.0) / 10);
}

struct Case {
  std::int64_t M, K, W, NNZ;  // W: spmm's N, sddmm's D
  ParamValues params;
};

void expect_passes(const std::string& problem, Backend& backend, const Case& c, int pattern = -1) {
  const char* width = problem == "spmm" ? "N" : "D";
  EvalRequest req = test::library_request(problem, backend.name(),
                                          {{"M", c.M}, {"K", c.K}, {width, c.W}, {"NNZ", c.NNZ}}, DType::fp32, c.params);
  if (pattern >= 0) req.scalars = req.verify.scalars = {{"pattern", pattern}};
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.passed()) << "pattern " << pattern << ": " << test::describe(r);
}

// Every pattern at an odd shape (rows not a multiple of any block, columns with vector and scalar
// tails); the default run's trials and fuzzed shapes walk the patterns again at other shapes.
void every_pattern(const std::string& problem, Backend& backend, const Case& c) {
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern) expect_passes(problem, backend, c, pattern);
}

TEST(SparseCpu, SpmmPassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  every_pattern("spmm", *backend, {37, 53, 45, 400, {{"BN", 32}, {"NV", 1}, {"VW", 8}, {"RBLOCKS", 5}}});
  expect_passes("spmm", *backend, {1, 1, 1, 1, {}});            // a 1x1 matrix
  expect_passes("spmm", *backend, {29, 31, 70, 1, {}});         // one nonzero
  expect_passes("spmm", *backend, {13, 17, 3, 2000, {{"RBLOCKS", 64}}});  // fully dense, N below a vector
  expect_passes("spmm", *backend, {131, 97, 130, 3000, {}});    // defaults, several strips
}

TEST(SparseCpu, SddmmPassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  every_pattern("sddmm", *backend, {37, 53, 45, 400, {{"NV", 2}, {"VW", 8}, {"RBLOCKS", 5}}});
  expect_passes("sddmm", *backend, {1, 1, 1, 1, {}});
  expect_passes("sddmm", *backend, {29, 31, 70, 1, {}});
  expect_passes("sddmm", *backend, {13, 17, 3, 2000, {{"RBLOCKS", 64}}});  // NNZ past M*K: zeros written
}

TEST(SparseOpenCl, SpmmAndSddmmPassEveryPattern) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  every_pattern("spmm", *backend, {37, 53, 45, 400, {{"WX", 8}, {"CPT", 2}, {"WY", 3}}});
  every_pattern("sddmm", *backend, {37, 53, 45, 400, {{"WG", 16}, {"PPT", 3}}});
  expect_passes("spmm", *backend, {1, 1, 1, 1, {}});
  expect_passes("sddmm", *backend, {1, 1, 1, 1, {}});
  expect_passes("spmm", *backend, {13, 17, 3, 2000, {}});
  expect_passes("sddmm", *backend, {29, 31, 70, 1, {}});
}

TEST(SparseCli, BadSizesAndPatternsExitTwo) {
  const struct {
    const char* args;
    const char* names;
  } bad[] = {{"--size M=0", "size M=0"}, {"--size NNZ=16777216", "size NNZ=16777216"},
             {"--scalar pattern=2.5", "scalar pattern=2.5"}};
  for (const auto& b : bad) {
    const auto r = test::kforge_cli(std::string("verify spmm --backend cpu ") + b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(b.names), std::string::npos) << b.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace kforge
