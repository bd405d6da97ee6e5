// spmm_bell (kernels/sparse/spmm_bell_problem.hpp, spmm_bell.cpp): blocked-ELL SpMM passes the
// thorough protocol on every pattern at shapes that are no multiple of BS (ragged last block row
// and column), with exact (4, 8) and run-time-bounded (3) tiles, EC cutting block rows or
// padding them; empty block rows; a kernel that skips the last partial tile is caught;
// malformed structures are refused naming the slot; the bound follows each row's nonzeros.
// OpenCL (spmm_bell.cl, on PoCL here): the same shapes with register tiles of RB = 4 rows whole
// (BS 4, 8, 16: one, two, four chunks) and bounded (BS 3, 1; BS 5: a whole chunk and one row),
// several work-groups' block rows and column strips with tails, empty block rows, and a variant
// that skips the last partial tile caught. (spmm_bell.cu: compiled for sm_90 by
// CudaBackend.EveryLibraryKernelCompilesThroughTheBackend.)
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

struct Case {
  std::int64_t M, K, N, NNZ, BS, EC;
  ParamValues params;
};

Sizes sizes_of(const Case& c) {
  return {{"M", c.M}, {"K", c.K}, {"N", c.N}, {"NNZ", c.NNZ}, {"BS", c.BS}, {"EC", c.EC}};
}

EvalResult evaluate_case(Backend& backend, const Case& c, int pattern = -1, const std::string& source = "") {
  EvalRequest req = test::library_request("spmm_bell", backend.name(), sizes_of(c), DType::fp32, c.params);
  if (pattern >= 0) req.scalars = req.verify.scalars = {{"pattern", pattern}};
  if (!source.empty()) req.kernel.source = source;
  return evaluate(req, backend);
}

void expect_passes(Backend& backend, const Case& c, int pattern = -1) {
  const EvalResult r = evaluate_case(backend, c, pattern);
  EXPECT_TRUE(r.passed()) << "BS " << c.BS << " EC " << c.EC << " pattern " << pattern << ": " << test::describe(r);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SpmmBellCpu, PassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  // M = 37, K = 53: a ragged last block row and column for BS 3, 4 and 8; N = 45: vector and
  // scalar column tails.
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern) {
    expect_passes(*backend, {37, 53, 45, 400, 4, 14, {{"BN", 32}, {"NV", 1}, {"VW", 8}}}, pattern);  // every tile
    expect_passes(*backend, {37, 53, 45, 400, 8, 3, {}}, pattern);  // EC cuts the fuller block rows
  }
  expect_passes(*backend, {37, 53, 45, 400, 3, 18, {{"NV", 2}, {"VW", 8}}}, 3);  // a tile bounded at run time
  expect_passes(*backend, {1, 1, 1, 1, 1, 1, {}}, 0);                            // a 1x1 matrix
  expect_passes(*backend, {13, 17, 3, 2000, 16, 2, {}}, 0);                      // dense, one tile larger than A
}

// One nonzero: every block row but one is all padding; the empty-rows pattern with BS = 1.
TEST(SpmmBellCpu, EmptyBlockRows) {
  auto backend = make_backend("cpu");
  const auto p = find_problem("spmm_bell");
  const Case one{29, 31, 70, 1, 4, 2, {}};
  const Instance in = p->make_instance(sizes_of(one), DType::fp32, Distribution::normal, 5, 1, {{"pattern", 0}});
  const auto& col = in.tensors[0];
  EXPECT_EQ(std::count_if(col.begin(), col.end(), [](double v) { return v >= 0; }), 1);
  expect_passes(*backend, one, 0);
  expect_passes(*backend, {29, 31, 70, 300, 1, 31, {}}, 5);
}

// A kernel that drops the last, partial block column (K - k0 < BS) passes wherever K is a
// multiple of BS and must fail here (K = 53, BS = 4; banded puts nonzeros in every block column).
TEST(SpmmBellCpu, SkippingThePartialTileIsRejected) {
  auto backend = make_backend("cpu");
  const auto p = find_problem("spmm_bell");
  std::string source = library_kernel(*p, Lang::cpp, p->default_sizes()).source;
  const std::string stop = "if (bc < 0) break;  // padding follows the tiles";
  const auto at = source.find(stop);
  ASSERT_NE(at, std::string::npos) << "the kernel's slot loop moved: update this test";
  source.replace(at, stop.size(), "if (bc < 0) break; if ((bc + 1) * rows > K) continue;");
  const EvalResult r = evaluate_case(*backend, {37, 53, 64, 400, 4, 14, {}}, 2, source);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << test::describe(r);
}

// One configuration (one PoCL compile: a cold compile is ~2 s): N = 45 with WX * CPT = 32, a
// strip and a tail; block rows of 4 in groups of WY = 4 (the last group part empty), of 8 (two
// chunks of RB = 4) cut by EC; chunks bounded at run time (BS 3: 3 rows of 4; BS 5: 4, then 1).
TEST(SpmmBellOpenCl, PassesEveryPatternAtOddShapes) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  const ParamValues p{{"WX", 8}, {"CPT", 4}, {"WY", 4}, {"RB", 4}};
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern) {
    expect_passes(*backend, {37, 53, 45, 400, 4, 14, p}, pattern);  // every tile
    expect_passes(*backend, {37, 53, 45, 400, 8, 3, p}, pattern);   // EC cuts the fuller block rows
  }
  expect_passes(*backend, {37, 53, 45, 400, 3, 18, p}, 3);  // 3 rows of a 4-row chunk
  expect_passes(*backend, {37, 53, 45, 400, 5, 11, p}, 2);  // a whole chunk, then 1 row
}

// At the defaults (RB = 4): a 1x1, a dense 16 x 16 tile larger than A (four chunks, the last
// rows past M), empty block rows, BS = 1 (one row of a 4-row chunk).
TEST(SpmmBellOpenCl, EdgeShapesAtTheDefaults) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  expect_passes(*backend, {1, 1, 1, 1, 1, 1, {}}, 0);        // a 1x1 matrix
  expect_passes(*backend, {13, 17, 3, 2000, 16, 2, {}}, 0);  // dense, one tile larger than A
  expect_passes(*backend, {29, 31, 70, 1, 4, 2, {}}, 0);     // one nonzero: every other block row empty
  expect_passes(*backend, {29, 31, 70, 300, 1, 31, {}}, 5);  // the empty rows and columns pattern, BS = 1
}

// The OpenCL kernel with the last, partial block column skipped (K - k0 < BS): right wherever K
// is a multiple of BS, so the protocol must catch it at K = 53, BS = 4 (banded: nonzeros there).
TEST(SpmmBellOpenCl, SkippingThePartialTileIsRejected) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  const auto p = find_problem("spmm_bell");
  std::string source = library_kernel(*p, Lang::opencl, p->default_sizes()).source;
  const std::string cut = "nk = min(bs, K - k0);";
  const auto at = source.find(cut);
  ASSERT_NE(at, std::string::npos) << "the kernel's tile loop moved: update this test";
  source.replace(at, cut.size(), "nk = K - k0 < bs ? 0 : bs;");
  const EvalResult r = evaluate_case(*backend, {37, 53, 64, 400, 4, 14, {}}, 2, source);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << test::describe(r);
}

TEST(SpmmBellProblem, MalformedStructuresAreRefusedNamingTheSlot) {
  const auto p = find_problem("spmm_bell");
  const Instance in = p->make_instance(sizes_of({9, 10, 3, 60, 4, 3, {}}), DType::fp32, Distribution::normal, 3, 1,
                                       {{"pattern", 0}});
  std::vector<std::vector<double>> out, mag;
  ASSERT_GE(in.tensors[0][1], 0) << "block row 0 should hold two tiles at 60% density";
  Instance bad = in;
  bad.tensors[0][0] = 3;  // 3 block columns: 0..2
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("block_col[0]=3"), std::string::npos);
  bad = in;
  bad.tensors[0][1] = bad.tensors[0][0];
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("twice"), std::string::npos);
  bad = in;
  bad.tensors[0][0] = -1;  // a tile after padding
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("block_col[1]="), std::string::npos);
  bad = in;
  bad.tensors[0][0] = 0.5;
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("must be an integer"), std::string::npos);
}

// The bound's lengths are each row's stored nonzeros; cells off the pattern are zero; EC cuts
// a block row to its fullest tiles, ascending.
TEST(SpmmBellProblem, GeneratorCutsToEcAndBoundFollowsRows) {
  const auto p = find_problem("spmm_bell");
  const Sizes s = sizes_of({41, 57, 5, 900, 4, 3, {}});
  const Instance in = p->make_instance(s, DType::fp32, Distribution::normal, 9, 0, {{"pattern", 0}});
  sparse::BlockedEll e;
  e.rows = 41, e.cols = 57, e.block = 4, e.ell_cols = 3;
  e.block_col.assign(in.tensors[0].begin(), in.tensors[0].end());
  e.values = in.tensors[1];
  const sparse::Csr a = sparse::to_csr(e);
  EXPECT_GT(a.nnz(), 0);
  EXPECT_LT(a.nnz(), 900);  // uniform at 39% fills all 15 block columns: 3 kept per block row
  for (std::int64_t br = 0; br < 11; ++br)
    for (int s2 = 1; s2 < 3; ++s2) EXPECT_LT(e.block_col[br * 3 + s2 - 1], e.block_col[br * 3 + s2]);
  const auto n = p->reduction_lengths(in);
  ASSERT_EQ(n.size(), 1u);
  for (std::int64_t r = 0; r < 41; ++r)
    EXPECT_EQ(n[0][r * 5 + 2], std::max<double>(1.0, static_cast<double>(a.row_ptr[r + 1] - a.row_ptr[r])));
  EXPECT_EQ(p->flops(s), 2.0 * (11 * 3 * 16) * 5);  // NNZ past what 3 slots of 4x4 tiles hold: the slots count
}

TEST(SpmmBellCli, BadSizesExitTwo) {
  for (const char* b : {"BS=17", "M=0"}) {
    const auto r = test::kforge_cli(std::string("verify spmm_bell --backend cpu --size ") + b);
    EXPECT_EQ(r.exit_code, 2) << b << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(std::string("size ") + b), std::string::npos) << b << ": " << r.err;
  }
}

}  // namespace
}  // namespace kforge
