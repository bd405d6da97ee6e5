// spmm_adaptive.cpu (kernels/sparse/spmm_adaptive.cpp): the density-adaptive spmm passes the
// thorough protocol on every pattern at odd shapes with the dense path forced (DENSE_PERMILLE 0:
// every row tile dense) and with the choice left to the measured density (and CSR forced once),
// tiles of 2, 4 and 8 rows, a 1x1 matrix and N below a vector; it stays behind spmm.cpu as the
// library default.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/sparse.hpp"
#include "kernels/family_test.hpp"

namespace kforge {
namespace {

KernelSpec adaptive_spec() {
  const auto kernels = library_kernels(*find_problem("spmm"));
  const auto it = std::find_if(kernels.begin(), kernels.end(), [](const KernelSpec& k) { return k.name == "spmm_adaptive.cpu"; });
  if (it == kernels.end()) throw std::runtime_error("spmm_adaptive.cpu is not among spmm's kernels");
  return *it;
}

void expect_passes(Backend& backend, const Sizes& sizes, const ParamValues& params, int pattern) {
  EvalRequest req = test::library_request("spmm", "cpu", sizes, DType::fp32, params);
  req.kernel = adaptive_spec();
  req.scalars = req.verify.scalars = {{"pattern", pattern}};
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.passed()) << "pattern " << pattern << ": " << test::describe(r);
}

TEST(SpmmAdaptive, EveryPatternOnEachPathAndAdaptive) {
  auto backend = make_backend("cpu");
  const Sizes odd{{"M", 53}, {"K", 61}, {"N", 45}, {"NNZ", 900}};
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    for (const std::int64_t threshold : {0, 250, 1001}) {
      if (threshold == 1001 && pattern > 0) continue;  // the CSR path is spmm.cpp's loop: one pattern
      expect_passes(*backend, odd,
                    {{"DENSE_PERMILLE", threshold}, {"RT", pattern % 2 == 0 ? 8 : 4}, {"DNV", 1}, {"NV", 1}, {"BN", 32}},
                    pattern);
    }
}

TEST(SpmmAdaptive, TinyAndDenseShapes) {
  auto backend = make_backend("cpu");
  expect_passes(*backend, {{"M", 1}, {"K", 1}, {"N", 1}, {"NNZ", 1}}, {{"DENSE_PERMILLE", 0}}, 0);
  expect_passes(*backend, {{"M", 17}, {"K", 19}, {"N", 3}, {"NNZ", 323}}, {{"DENSE_PERMILLE", 400}, {"RT", 2}}, 0);
  expect_passes(*backend, {{"M", 67}, {"K", 33}, {"N", 131}, {"NNZ", 2000}}, {}, 6);  // one dense row, defaults
}

// The CSR path is spmm.cpu's code (kernels/common/spmm_rows.hpp) over runs of CSR tiles inside
// work-balanced row blocks whose ends cut tiles: 4 or 5 blocks over 53 rows with tiles of 8 and
// a threshold that puts tiles on both paths (power-law rows, 4-row blocks, one dense row), at NV = 8 with
// the 2-D tiles forced (KP 16, KMIN 0: several K ranges) and the one-pass path (KP 0).
TEST(SpmmAdaptive, CsrRunsBetweenDenseTilesInWorkBlocks) {
  auto backend = make_backend("cpu");
  const Sizes odd{{"M", 53}, {"K", 61}, {"N", 77}, {"NNZ", 1100}};
  for (const int pattern : {1, 3, 6})
    for (const std::int64_t kp : {0, 16})
      expect_passes(*backend, odd,
                    {{"DENSE_PERMILLE", 400}, {"RBLOCKS", pattern == 3 ? 5 : 4}, {"NV", 8}, {"BN", 128},
                     {"KP", kp}, {"KMIN", 0}},
                    pattern);
}

// A planted error in the run bookkeeping: the last row of each block's final CSR run left out
// (out is poisoned by the protocol) must be rejected.
TEST(SpmmAdaptive, PlantedErrorIsRejected) {
  auto backend = make_backend("cpu");
  EvalRequest req = test::library_request("spmm", "cpu", {{"M", 53}, {"K", 61}, {"N", 45}, {"NNZ", 900}}, DType::fp32,
                                          {{"RBLOCKS", 4}});
  req.kernel = adaptive_spec();
  const std::string from = "spmm_rows(row_ptr, col_idx, values, B, C, K, N, csr0, r1, n0, nc)";
  const auto at = req.kernel.source.find(from);
  ASSERT_NE(at, std::string::npos) << "the kernel no longer contains: " << from;
  req.kernel.source.replace(at, from.size(), "spmm_rows(row_ptr, col_idx, values, B, C, K, N, csr0, r1 - 1, n0, nc)");
  req.verify.trials = 2;
  const EvalResult r = evaluate(req, *backend);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << r.error;
}

TEST(SpmmAdaptive, IsNotTheLibraryDefault) {
  EXPECT_EQ(library_kernel(*find_problem("spmm"), Lang::cpp).name, "spmm.cpu");
}

}  // namespace
}  // namespace kforge
