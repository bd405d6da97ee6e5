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

EvalRequest adaptive_request(const Sizes& sizes, const ParamValues& params, int pattern) {
  EvalRequest req = test::library_request("gnn_aggregate", "cpu", sizes, DType::fp32, params);
  req.kernel = adaptive_spec();
  req.scalars = req.verify.scalars = {{"pattern", pattern}};
  return req;
}

void expect_passes(Backend& backend, const Sizes& sizes, const ParamValues& params, int pattern, const std::string& what) {
  const EvalResult r = evaluate(adaptive_request(sizes, params, pattern), backend);
  EXPECT_TRUE(r.passed()) << what << ", pattern " << pattern << ": " << test::describe(r);
}

// The kernel with `from` replaced by `to` in its source must fail verification (wrong results,
// not a compile error or a refused configuration).
void expect_rejected(Backend& backend, const Sizes& sizes, const ParamValues& params, int pattern,
                     const std::string& from, const std::string& to) {
  EvalRequest req = adaptive_request(sizes, params, pattern);
  test::plant(req, from, to);
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.disposition == Disposition::incorrect || r.disposition == Disposition::nondeterministic)
      << "planted `" << to << "`, pattern " << pattern << ": " << test::describe(r);
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

// The long rows are found once per launch by the first splitter block (a vector pass first: none
// long, no list) and forgotten by the last; the mean at DENSE_KINDS 0 runs untiled CSR blocks.
// Hubs (power_law, the dense row) and no long row (uniform), odd shapes,
// both kinds; then three planted bugs rejected: the pass that says whether any row is long always
// saying no (the long rows then written by nobody), the list kept from the previous launch (the
// protocol's trials draw new structures), and the untiled blocks' last row dropped (the mean).
TEST(SparseGnnAdaptive, LongRowsOncePerLaunchAndUntiledMean) {
  auto backend = make_backend("cpu");
  const Sizes odd{{"M", 53}, {"N", 45}, {"NNZ", 400}};
  const ParamValues hubs{{"SPLITS", 7}, {"LONG_PERMILLE", 50}, {"NV", 1}, {"BN", 32}};
  expect_passes(*backend, odd, hubs, 1, "power-law hubs");
  expect_passes(*backend, odd, hubs, 6, "one dense row");
  expect_passes(*backend, odd, hubs, 0, "no long row");  // rows of ~8 edges of 400: none >= 20
  expect_rejected(*backend, odd, hubs, 6, "any |= row_ptr[r + 1] - row_ptr[r] >= threshold;",
                  "any |= 0 * (row_ptr[r + 1] - row_ptr[r] >= threshold);");
  expect_rejected(*backend, odd, hubs, 1, "finished.store(0, std::memory_order_relaxed);\n    scanned = false;",
                  "finished.store(0, std::memory_order_relaxed);");
  expect_rejected(*backend, odd, hubs, 0, "for (int r = r0; r < r1; ++r)\n      if (!is_long",
                  "for (int r = r0; r < r1 - 1; ++r)\n      if (!is_long");
}

TEST(SparseGnnAdaptive, IsNotTheLibraryDefault) {
  EXPECT_EQ(library_kernel(*find_problem("gnn_aggregate"), Lang::cpp).name, "gnn_aggregate.cpu");
}

}  // namespace
}  // namespace kforge
