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
      expect_passes(*backend, odd, {{"DENSE_PERMILLE", threshold}, {"RT", pattern % 2 == 0 ? 8 : 4}, {"NV", 1}, {"BN", 32}},
                    pattern);
    }
}

TEST(SpmmAdaptive, TinyAndDenseShapes) {
  auto backend = make_backend("cpu");
  expect_passes(*backend, {{"M", 1}, {"K", 1}, {"N", 1}, {"NNZ", 1}}, {{"DENSE_PERMILLE", 0}}, 0);
  expect_passes(*backend, {{"M", 17}, {"K", 19}, {"N", 3}, {"NNZ", 323}}, {{"DENSE_PERMILLE", 400}, {"RT", 2}}, 0);
  expect_passes(*backend, {{"M", 67}, {"K", 33}, {"N", 131}, {"NNZ", 2000}}, {}, 6);  // one dense row, defaults
}

TEST(SpmmAdaptive, IsNotTheLibraryDefault) {
  EXPECT_EQ(library_kernel(*find_problem("spmm"), Lang::cpp).name, "spmm.cpu");
}

}  // namespace
}  // namespace kforge
