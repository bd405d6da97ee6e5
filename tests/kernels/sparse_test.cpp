// The sparse family (kernels/sparse/, include/kforge/sparse.hpp): formats and conversions,
// every generator's structure, malformed structures refused naming the index, the per-row
// error bound, and spmm / sddmm passing the thorough protocol at odd shapes on cpu and opencl
// for every pattern, including a 1x1 matrix, one nonzero, empty rows and a fully dense row.
// OpenCL cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

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

// A generated pattern with random nonzero values in (-2, -0.5] U [0.5, 2).
sparse::Csr with_values(sparse::Csr a, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  a.values.resize(a.nnz());
  for (auto& v : a.values) v = (rng() % 2 ? 1 : -1) * u(rng);
  return a;
}

TEST(SparseFormat, BlockedEllRoundTripsEveryPatternAtRaggedEdges) {
  for (int p = 0; p < sparse::kPatternCount; ++p)
    for (const std::int64_t block : {1, 3, 4, 8}) {
      const sparse::Csr a = with_values(sparse::generate(static_cast<Pattern>(p), 61, 47, 500, 5 + p), 11 * p + block);
      const sparse::BlockedEll e = sparse::to_blocked_ell(a, block);
      const std::string at = std::string(sparse::pattern_name(static_cast<Pattern>(p))) + ", block " + std::to_string(block);
      ASSERT_EQ(e.block_rows(), (61 + block - 1) / block) << at;
      ASSERT_EQ(e.block_col.size(), static_cast<std::size_t>(e.block_rows() * e.ell_cols)) << at;
      ASSERT_EQ(e.values.size(), static_cast<std::size_t>(e.block_rows() * e.ell_cols * block * block)) << at;
      for (std::int64_t br = 0; br < e.block_rows(); ++br)  // tiles ascending, padding after them
        for (std::int64_t s = 1; s < e.ell_cols; ++s) {
          const auto prev = e.block_col[br * e.ell_cols + s - 1], cur = e.block_col[br * e.ell_cols + s];
          EXPECT_TRUE(cur == -1 || (prev != -1 && cur > prev)) << at << ", block row " << br << " slot " << s;
        }
      const sparse::Csr back = sparse::to_csr(e);
      EXPECT_EQ(back.row_ptr, a.row_ptr) << at;
      EXPECT_EQ(back.col_idx, a.col_idx) << at;
      EXPECT_EQ(back.values, a.values) << at;
      const double stored = static_cast<double>(e.values.size());
      EXPECT_DOUBLE_EQ(e.fill(), stored > 0 ? static_cast<double>(a.nnz()) / stored : 1.0) << at;
    }
}

TEST(SparseFormat, BlockedEllEmptyBlockRowsRaggedTilesAndFill) {
  // 10 x 7 in 4-tiles: block rows {0-3, 4-7, 8-9}, block columns {0-3, 4-6}; block row 1 empty.
  const sparse::Csr a = sparse::to_csr(sparse::Coo{10, 7, {0, 2, 9, 9}, {5, 1, 0, 6}, {1.5, -2, 3, 4}});
  const sparse::BlockedEll e = sparse::to_blocked_ell(a, 4);
  EXPECT_EQ(e.ell_cols, 2);
  EXPECT_EQ(e.block_col, (std::vector<std::int64_t>{0, 1, -1, -1, 0, 1}));
  for (std::int64_t s = 2; s < 4; ++s)  // the empty block row's padding holds zeros only
    for (std::int64_t q = 0; q < 16; ++q) EXPECT_EQ(e.values[s * 16 + q], 0.0);
  EXPECT_EQ(e.values[(0 * 2 + 1) * 16 + 0 * 4 + 1], 1.5);  // (0, 5): tile (0, 1), cell (0, 1)
  EXPECT_EQ(e.values[(2 * 2 + 1) * 16 + 1 * 4 + 2], 4.0);  // (9, 6): tile (2, 1), cell (1, 2), on the ragged edge
  const sparse::Csr back = sparse::to_csr(e);
  EXPECT_EQ(back.row_ptr, a.row_ptr);
  EXPECT_EQ(back.col_idx, a.col_idx);
  EXPECT_EQ(back.values, a.values);
  EXPECT_DOUBLE_EQ(e.fill(), 4.0 / 96.0);
  // Block-sparse rows fill their tiles; uniform ones do not.
  const auto fill = [](Pattern p) {
    return sparse::to_blocked_ell(with_values(sparse::generate(p, 256, 256, 4096, 3), 4), 4).fill();
  };
  EXPECT_GT(fill(Pattern::block), 0.9);
  EXPECT_LT(fill(Pattern::uniform), 0.3);
  // An all-empty matrix: no slots at all.
  const sparse::BlockedEll none = sparse::to_blocked_ell(sparse::generate(Pattern::uniform, 5, 5, 0, 1), 2);
  EXPECT_EQ(none.ell_cols, 0);
  EXPECT_EQ(sparse::to_csr(none).nnz(), 0);
}

TEST(SparseFormat, BlockedEllMalformedIsRefusedByName) {
  const sparse::Csr a = with_values(sparse::generate(Pattern::uniform, 9, 9, 30, 2), 3);
  EXPECT_NE(error_of([&] { (void)sparse::to_blocked_ell(a, 0); }).find("block size 0 must be >= 1"), std::string::npos);
  sparse::BlockedEll e = sparse::to_blocked_ell(a, 3);
  ASSERT_GE(e.ell_cols, 2);
  sparse::BlockedEll range = e;
  range.block_col[1] = 3;
  EXPECT_NE(error_of([&] { (void)sparse::to_csr(range); }).find("block_col[1]=3 (block row 0) is outside the 3 block columns"),
            std::string::npos) << error_of([&] { (void)sparse::to_csr(range); });
  sparse::BlockedEll twice = e;
  twice.block_col[1] = twice.block_col[0];
  EXPECT_NE(error_of([&] { (void)sparse::to_csr(twice); }).find("holds block column"), std::string::npos);
  sparse::BlockedEll shortv = e;
  shortv.values.pop_back();
  EXPECT_NE(error_of([&] { (void)sparse::to_csr(shortv); }).find("needs"), std::string::npos);
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

// Every library tensor of an integer type of its own is an input (the compare has no exact path
// per tensor), and every sparse problem's pointers and indices are int32 (their kernels take int*).
TEST(SparseProblem, PointersAndIndicesAreInt32Inputs) {
  for (const auto& p : problems())
    for (const auto& t : p->tensors())
      if (t.storage) EXPECT_EQ(t.role, Role::in) << p->name() << "." << t.name;
  const std::map<std::string, std::vector<std::string>> indices{
      {"spmm", {"row_ptr", "col_idx"}},       {"sddmm", {"row_ptr", "col_idx"}},
      {"fusedmm", {"row_ptr", "col_idx"}},    {"gnn_aggregate", {"row_ptr", "col_idx"}},
      {"gnn_attention", {"row_ptr", "col_idx"}}, {"spmspv", {"col_ptr", "row_idx", "x_idx"}},
      {"spdnn", {"W_idx"}},                   {"spmm_bell", {"block_col"}}};
  for (const auto& [name, want] : indices) {
    std::vector<std::string> got;
    for (const auto& t : find_problem(name)->tensors())
      if (t.storage == DType::int32) got.push_back(t.name);
    EXPECT_EQ(got, want) << name;
  }
}

// Past 2^24 nonzeros (row pointers fp32 could not hold: it keeps only even integers there): the
// pointers and indices travel as int32. Quick protocol (one trial) at 8191 x 8193 x 1 with
// 17831808 = 2^24 + 1054592 nonzeros (27%): about 480 rows start past 2^24. A kernel that reads
// its row pointers through float, as every sparse kernel did before they were int32, rounds the
// odd ones (each a nonzero moved to the neighbouring row) and is rejected. The uniform pattern
// spreads nonzeros evenly, NNZ / M = 2177 a row (odd, so the pointers alternate in parity: with
// an even count every pointer past 2^24 could be even and the bug invisible). NNZ is even, so no
// rounded pointer passes the end (the guard band's int32 bytes read as an index would crash this
// in-process run).
TEST(SparseCpu, SpmmPassesPastTwoToTheTwentyFourNonzeros) {
  auto backend = make_backend("cpu");
  EvalRequest req = test::library_request("spmm", "cpu", {{"M", 8191}, {"K", 8193}, {"N", 1}, {"NNZ", 17831808}});
  req.verify.thorough = false;
  req.verify.trials = 1;  // one instance of 17.8 M nonzeros: the suite's time
  req.scalars = req.verify.scalars = {{"pattern", 0}};
  EXPECT_TRUE(evaluate(req, *backend).passed()) << "the library kernel";
  req.params = {{"KP", 0}};  // the one-pass row code, where the bug is planted
  test::plant(req, "const int p0 = row_ptr[r], p1 = row_ptr[r + 1];",
              "const int p0 = (int)(float)row_ptr[r], p1 = (int)(float)row_ptr[r + 1];");
  const EvalResult r = evaluate(req, *backend);
  EXPECT_FALSE(r.passed()) << "row pointers read through float: " << test::describe(r);
}

TEST(SparseCpu, SpmmPassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  every_pattern("spmm", *backend, {37, 53, 45, 400, {{"BN", 32}, {"NV", 1}, {"VW", 8}, {"RBLOCKS", 5}}});
  expect_passes("spmm", *backend, {1, 1, 1, 1, {}});            // a 1x1 matrix
  expect_passes("spmm", *backend, {29, 31, 70, 1, {}});         // one nonzero
  expect_passes("spmm", *backend, {13, 17, 3, 2000, {{"RBLOCKS", 64}}});  // fully dense, N below a vector
  expect_passes("spmm", *backend, {131, 97, 130, 3000, {}});    // defaults, several strips
}

// The register tile's paths at AVX2's width on any machine: N = 123 walks a full tile of 8
// vectors, then 4, 2, 1 and 3 floats; UN > 1 leaves each row's last nonzeros to the one-at-a-time
// loop; the prefetch runs past row ends to the block's; a small L2KB at a large K cuts the strip
// into one-tile panels (the last one a scalar tail). Every pattern: empty rows, a dense row.
// KP=0: the one-pass path (the defaults take the 2-D tiles' walk, tested below and above).
TEST(SparseCpu, SpmmTilesUnrollPrefetchAndPanelsPassEveryPattern) {
  auto backend = make_backend("cpu");
  every_pattern("spmm", *backend,
                {37, 53, 123, 400, {{"BN", 256}, {"NV", 8}, {"VW", 8}, {"UN", 1}, {"PD", 4}, {"RBLOCKS", 5}, {"KP", 0}}});
  every_pattern("spmm", *backend,
                {41, 59, 45, 700, {{"BN", 64}, {"NV", 2}, {"VW", 8}, {"UN", 4}, {"PD", 16}, {"RBLOCKS", 4}, {"KP", 0}}});
  every_pattern("spmm", *backend,
                {29, 3001, 45, 5000, {{"BN", 32}, {"NV", 1}, {"VW", 8}, {"UN", 2}, {"L2KB", 128}, {"RBLOCKS", 2}, {"KP", 0}}});
  expect_passes("spmm", *backend, {13, 17, 67, 2000, {{"UN", 2}, {"KP", 0}}});  // fully dense, UN = 2
}

// The 2-D tiles (KP > 0) at a K several B panels long: KP=32 KiB makes ranges of 128 rows of B
// for an 8-vector tile (24 ranges at K = 3001; the 4-, 2-, 1-vector and float tails at N = 123
// sum over the same ranges), 512 rows for a 2-vector tile with UN = 4 and the prefetch crossing
// rows and ranges; KMIN=0 splits every block, KMIN=32 sends these sparse blocks to the one-pass
// path. K of one range (the defaults at K <= 1024) takes the same walk with one range: the
// cases of SpmmPassesEveryPatternAtOddShapes. Every pattern: empty rows, power-law rows, a dense row, rows whose
// nonzeros all fall past the first range.
TEST(SparseCpu, SpmmTwoDimensionalTilesPassEveryPattern) {
  auto backend = make_backend("cpu");
  every_pattern("spmm", *backend,
                {37, 3001, 123, 5000, {{"BN", 256}, {"NV", 8}, {"VW", 8}, {"KP", 32}, {"KMIN", 0}, {"RBLOCKS", 5}}});
  every_pattern("spmm", *backend,
                {41, 2999, 45, 7000,
                 {{"BN", 64}, {"NV", 2}, {"VW", 8}, {"UN", 4}, {"PD", 16}, {"KP", 32}, {"KMIN", 0}, {"RBLOCKS", 4}}});
  every_pattern("spmm", *backend, {29, 3001, 67, 5000, {{"KP", 32}, {"KMIN", 32}, {"RBLOCKS", 2}}});
  expect_passes("spmm", *backend, {13, 17, 67, 2000, {{"KP", 32}, {"KMIN", 0}}});  // fully dense, one range
  every_pattern("spmm", *backend, {37, 53, 123, 400, {{"NV", 8}, {"VW", 8}, {"UN", 4}, {"PD", 16}}});  // one range, UN
}

// The problem accepts a row's columns in any order; the 2-D tiles cut a row into K ranges by
// binary search, each search starting at the previous cut, so the cuts partition any row. Every
// row reversed (descending columns, a valid CSR) into 24 ranges: each row must still be summed
// once (cuts allowed to fall back below the previous one fail here: checked by hand).
TEST(SparseCpu, SpmmTwoDimensionalTilesKeepRowsWhoseColumnsDescend) {
  auto backend = make_backend("cpu");
  const auto p = find_problem("spmm");
  const Sizes s{{"M", 37}, {"K", 3001}, {"N", 45}, {"NNZ", 5000}};
  Instance in = p->make_instance(s, DType::fp32, Distribution::normal, 9, 0, {{"pattern", 0}});
  auto &rp = in.tensors[0], &ci = in.tensors[1], &v = in.tensors[2];
  for (std::int64_t r = 0; r < 37; ++r) {
    const auto p0 = static_cast<std::ptrdiff_t>(rp[r]), p1 = static_cast<std::ptrdiff_t>(rp[r + 1]);
    std::reverse(ci.begin() + p0, ci.begin() + p1);
    std::reverse(v.begin() + p0, v.begin() + p1);
  }
  ASSERT_GT(ci[1], ci[2]);  // row 0 now descends
  std::vector<std::vector<double>> ref, mag;
  p->reference(in, ref, mag);
  const KernelSpec k = library_kernel(*p, Lang::cpp, s);
  const ParamValues params = k.resolve({{"NV", 8}, {"VW", 8}, {"KP", 32}, {"KMIN", 0}, {"RBLOCKS", 5}});
  Defines defines{{"KF_DTYPE_FP32", "1"}};
  for (const auto& [name, val] : params) defines.emplace_back(name, std::to_string(val));
  auto module = backend->compile(k.source, k.entry, defines, k.source_path);
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Arg> args;
  for (std::size_t t = 0; t < 5; ++t) {  // row_ptr and col_idx int32, the rest fp32; C poisoned
    bufs.push_back(test::upload_tensor(*backend, *p, in, t));
    args.push_back(Arg::buf(*bufs.back()));
  }
  for (const char* n : {"M", "K", "N", "NNZ"}) args.push_back(Arg::i(static_cast<std::int32_t>(s.at(n))));
  args.push_back(Arg::f(0.0f));  // pattern
  backend->run(*module, k.geometry(params, s), args);
  std::vector<float> got(37 * 45);
  backend->read(*bufs[4], got.data(), got.size() * 4);
  for (std::size_t e = 0; e < got.size(); ++e)  // fp32 sums of ~135 terms: far inside 1e-5 of their magnitude
    ASSERT_NEAR(got[e], ref[0][e], 1e-5 * mag[0][e] + 1e-30) << "C[" << e << "]";
}

// sddmm.cpu takes a row's nonzeros 8 at a time (kernels/common/dot8.hpp): D = 45 is 5 vectors
// and 5 scalar columns at VW = 8 (2 and 13 at VW = 16), D = 32 none (whole groups stored as one
// vector); ~11 nonzeros a row make a whole group and a short one, power-law rows and the dense
// row many groups, empty rows none. The protocol poisons out, so an output left unwritten fails.
TEST(SparseCpu, SddmmPassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  every_pattern("sddmm", *backend, {37, 53, 45, 400, {{"VW", 8}, {"RBLOCKS", 5}}});
  every_pattern("sddmm", *backend, {41, 67, 32, 700, {{"VW", 8}, {"RBLOCKS", 4}}});
  expect_passes("sddmm", *backend, {37, 53, 45, 400, {{"VW", 16}, {"RBLOCKS", 5}}}, 2);
  expect_passes("sddmm", *backend, {1, 1, 1, 1, {}});
  expect_passes("sddmm", *backend, {29, 31, 70, 1, {}});
  expect_passes("sddmm", *backend, {13, 17, 3, 2000, {{"RBLOCKS", 64}}});  // NNZ past M*K: zeros written
  expect_passes("sddmm", *backend, {19, 23, 8, 437, {}});                  // every row dense: 2 whole groups + 7
}

// Planted errors in the 8-dot path must be rejected: a lane of the shared shuffle tree taken
// from the wrong group member (kernels/common/dot8.hpp), the scalar tail of D losing its last
// column, and a short group's last output left unwritten.
TEST(SparseCpu, SddmmPlantedErrorsAreRejected) {
  auto backend = make_backend("cpu");
  const std::vector<std::pair<std::string, std::string>> plants = {
      {"4, 5, 6, 7, 12, 13, 14, 15);", "4, 5, 6, 7, 8, 9, 10, 11);"},
      {"for (int e = d; e < D; ++e)", "for (int e = d; e + 1 < D; ++e)"},
      {"for (int i = 0; i < n; ++i) {", "for (int i = 0; i + 1 < n; ++i) {"}};
  for (const auto& [from, to] : plants) {
    EvalRequest req = test::library_request("sddmm", "cpu", {{"M", 31}, {"K", 37}, {"D", 19}, {"NNZ", 400}});
    test::plant(req, from, to);
    req.verify.trials = 2;
    const EvalResult r = evaluate(req, *backend);
    EXPECT_EQ(r.disposition, Disposition::incorrect) << to << ": " << r.error;
  }
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
  } bad[] = {{"--size M=0", "size M=0"}, {"--size NNZ=2147483648", "size NNZ=2147483648"},
             {"--scalar pattern=2.5", "scalar pattern=2.5"}};
  for (const auto& b : bad) {
    const auto r = test::kforge_cli(std::string("verify spmm --backend cpu ") + b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(b.names), std::string::npos) << b.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace kforge
