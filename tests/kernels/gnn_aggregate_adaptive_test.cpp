// gnn_aggregate_adaptive.cpu (kernels/sparse/gnn_aggregate_adaptive.cpp): the density-adaptive
// GNN aggregation passes the thorough protocol (both kinds: the trials alternate GCN and mean) on
// every pattern at odd shapes with each path forced (the dense block everywhere; every row
// edge-parallel, cut across 7 splitter blocks) and with the choice left to the pattern (hubs
// edge-parallel, tiles dense or CSR); a 1x1 graph, a complete graph with N below a vector, more
// splitters than edges (empty splitter ranges inside a row's pieces), the single dense row at the
// defaults; and it stays behind gnn_aggregate.cpu as the library default.
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
  const auto kernels = library_kernels(*find_problem("gnn_aggregate"));
  const auto it = std::find_if(kernels.begin(), kernels.end(),
                               [](const KernelSpec& k) { return k.name == "gnn_aggregate_adaptive.cpu"; });
  if (it == kernels.end()) throw std::runtime_error("gnn_aggregate_adaptive.cpu is not among gnn_aggregate's kernels");
  return *it;
}

void expect_passes(Backend& backend, const Sizes& sizes, const ParamValues& params, int pattern, const std::string& what) {
  EvalRequest req = test::library_request("gnn_aggregate", "cpu", sizes, DType::fp32, params);
  req.kernel = adaptive_spec();
  req.scalars = req.verify.scalars = {{"pattern", pattern}};
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.passed()) << what << ", pattern " << pattern << ": " << test::describe(r);
}

const ParamValues kDenseOnly{{"DENSE_PERMILLE", 0}, {"DENSE_KINDS", 1}, {"SPLITS", 0}, {"RT", 4}, {"NV", 1}, {"BN", 32}};
const ParamValues kEdgeParallelOnly{{"SPLITS", 7}, {"LONG_PERMILLE", 0}, {"NV", 1}, {"BN", 32}};
const ParamValues kAdaptive{{"SPLITS", 3}, {"LONG_PERMILLE", 25}, {"DENSE_PERMILLE", 400}, {"DENSE_KINDS", 1}, {"RT", 8}, {"NV", 2}, {"BN", 32}, {"VW", 8}};

TEST(SparseGnnAdaptive, EveryPatternOnEachPathAndAdaptive) {
  auto backend = make_backend("cpu");
  const Sizes odd{{"M", 53}, {"N", 45}, {"NNZ", 400}};
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern) {
    expect_passes(*backend, odd, kDenseOnly, pattern, "dense block only");
    expect_passes(*backend, odd, kEdgeParallelOnly, pattern, "edge-parallel only");
    expect_passes(*backend, odd, kAdaptive, pattern, "adaptive");
  }
}

TEST(SparseGnnAdaptive, TinyCompleteAndSplitShapes) {
  auto backend = make_backend("cpu");
  expect_passes(*backend, {{"M", 1}, {"N", 1}, {"NNZ", 1}}, kDenseOnly, 0, "1x1, dense");
  expect_passes(*backend, {{"M", 1}, {"N", 1}, {"NNZ", 1}}, kEdgeParallelOnly, 0, "1x1, edge-parallel");
  expect_passes(*backend, {{"M", 17}, {"N", 3}, {"NNZ", 289}}, kAdaptive, 0, "complete graph");
  expect_passes(*backend, {{"M", 5}, {"N", 19}, {"NNZ", 7}}, {{"SPLITS", 64}, {"LONG_PERMILLE", 0}}, 0,
                "more splitters than edges");
  expect_passes(*backend, {{"M", 67}, {"N", 131}, {"NNZ", 2000}}, {}, 6, "one dense row, defaults");
}

TEST(SparseGnnAdaptive, IsNotTheLibraryDefault) {
  EXPECT_EQ(library_kernel(*find_problem("gnn_aggregate"), Lang::cpp).name, "gnn_aggregate.cpu");
}

}  // namespace
}  // namespace kforge
