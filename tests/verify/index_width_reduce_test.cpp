// The index_width check beyond gemm: reduce's row and column reductions declare a wide instance
// (X past 2^31 elements, zeros but its last two rows; the column max and argmax expect one zero
// row before the live ones), a row sum and a column max with 32-bit indices are rejected by it,
// and the library's kernels (64-bit indices) pass it. Each run maps 8 GiB of never-backed
// address space and reads it through the shared zero page: a few seconds.
#include <gtest/gtest.h>

#include <algorithm>

#include "kforge/problem.hpp"
#include "test_util.hpp"
#include "verify/index_width_ran.hpp"

namespace kforge {
namespace {

TEST(IndexWidthReduce, RowReductionsAndTheColumnSumDeclareATensorPast2To31Elements) {
  for (const char* name : {"reduce.sum_axis1", "reduce.max_axis1", "reduce.argmax_axis1"}) {
    const auto p = find_problem(name);
    const auto w = p->wide_index_shape(p->default_sizes());
    ASSERT_FALSE(w.sizes.empty()) << name;
    EXPECT_GT(p->tensor_elements(0, w.sizes), std::int64_t{1} << 31) << name;
    // The last live row starts past flat index 2^31: where a 32-bit i * N has wrapped.
    EXPECT_GE((w.sizes.at("M") - 1) * w.sizes.at("N"), std::int64_t{1} << 31) << name;
    EXPECT_EQ(w.live.at("N"), w.sizes.at("N")) << name;
    EXPECT_LT(p->tensor_elements(0, w.live), std::int64_t{1} << 20) << name << ": the live part stays small";
    p->check_sizes(w.sizes);  // argmax's index limit (2^24 along a row) holds
  }
  // The column reductions: X past 2^31 elements along the reduced axis; Y (N) does not grow.
  for (const char* name : {"reduce.sum_axis0", "reduce.max_axis0", "reduce.argmax_axis0"}) {
    const auto p = find_problem(name);
    const auto w = p->wide_index_shape({});
    ASSERT_FALSE(w.sizes.empty()) << name;
    EXPECT_GT(p->tensor_elements(0, w.sizes), std::int64_t{1} << 31) << name;
    EXPECT_EQ(p->tensor_elements(1, w.sizes), p->tensor_elements(1, w.live)) << name << ": Y does not grow";
    p->check_sizes(w.sizes);  // argmax's limit on the reduced length (2^24) holds
  }
}

// The column max and argmax: the zero rows change a column's result, as one zero row before the
// live ones does (Problem::wide_index_reference), argmax's indices past it moved by the rows
// between. Drawn here so that every case occurs: a column whose live values are all negative
// (the zero rows win: max 0, argmax 0, the first of them), one with a positive value in either
// live row, and a tie of a live zero with the zero rows (row 0 wins, numpy's first maximum).
TEST(IndexWidthReduce, TheColumnMaxAndArgmaxExpectOneZeroRowBeforeTheLiveOnes) {
  for (const char* name : {"reduce.max_axis0", "reduce.argmax_axis0", "reduce.sum_axis1", "reduce.sum_axis0"}) {
    const auto p = find_problem(name);
    const auto w = p->wide_index_shape({});
    Instance live;
    live.sizes = w.live;
    live.dtype = DType::fp32;
    const std::int64_t N = w.live.at("N");
    live.tensors.assign(2, {});
    live.tensors[0].resize(2 * N);
    for (std::int64_t j = 0; j < N; ++j) {
      const double a = -1.0 - 0.001 * static_cast<double>(j % 97), b = -2.0 + 0.0005 * static_cast<double>(j % 89);
      switch (j % 4) {
        case 0: live.tensors[0][j] = a, live.tensors[0][N + j] = b; break;             // both negative
        case 1: live.tensors[0][j] = -a, live.tensors[0][N + j] = b; break;            // the first live row
        case 2: live.tensors[0][j] = a, live.tensors[0][N + j] = -b + 0.25; break;     // the second
        default: live.tensors[0][j] = 0.0, live.tensors[0][N + j] = a; break;          // a tie with zero
      }
    }
    std::vector<std::vector<double>> out, mag;
    const bool own = p->wide_index_reference(live, w.sizes, out, mag);
    if (std::string(name).find("sum") != std::string::npos) {
      EXPECT_FALSE(own) << name << ": the zero rows' promise holds";
      continue;
    }
    ASSERT_TRUE(own) << name;
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(static_cast<std::int64_t>(out[0].size()), N);
    const bool arg = std::string(name).find("argmax") != std::string::npos;
    const double first_live = static_cast<double>(w.sizes.at("M") - 2);
    for (std::int64_t j = 0; j < N; ++j) {
      const double x0 = live.tensors[0][j], x1 = live.tensors[0][N + j];
      const double want_max = std::max({0.0, x0, x1});
      const double want_at = want_max > 0 ? (x0 == want_max ? first_live : first_live + 1) : 0.0;
      ASSERT_EQ(out[0][j], arg ? want_at : want_max) << name << " column " << j;
    }
  }
}

// The library's column sum through the wide run: every column sums 2^16 - 1 zero rows and two
// live ones, read across flat index 2^31.
TEST(IndexWidthReduce, TheLibraryColumnSumPasses) {
  const auto r = test::kforge_cli("verify reduce.sum_axis0 --backend cpu --size M=37,N=45 --index-width --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = test::parse_or_fail(r);
  EXPECT_TRUE(test::index_width_ran(j.is_array() ? j.at(0) : j)) << r.out;
}

TEST(IndexWidthReduce, A32BitRowStartIsRejectedAndTheLibraryKernelPasses) {
  const std::string wrong = std::string(KFORGE_TEST_DATA) + "/../verify/wrong/reduce_int32_row_index.cpp";
  const auto bad = test::kforge_cli("eval --problem reduce.sum_axis1 --lang cpp --entry sum_axis1 --source " + wrong +
                                    " --grid 'ceil_div(M,16)' --size M=37,N=1000 --json");
  const auto b = test::parse_or_fail(bad);
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_TRUE(b.value("disposition", "") == "crashed" || b.value("disposition", "") == "incorrect") << bad.out;
  EXPECT_EQ(b.value("verify", nlohmann::json::object()).value("failed_check", ""), "index_width") << bad.out;

  const auto good = test::kforge_cli("verify reduce.sum_axis1 --backend cpu --size M=37,N=1000 --index-width --json");
  ASSERT_EQ(good.exit_code, 0) << good.out << good.err;
  const auto g = test::parse_or_fail(good);
  const nlohmann::json& doc = g.is_array() ? g.at(0) : g;
  EXPECT_EQ(doc.value("disposition", ""), "passed") << good.out;
  EXPECT_TRUE(test::index_width_ran(doc)) << "index_width did not run:\n" << good.out;
}

// The library's column max and argmax through the wide run: every column's zero rows and two
// live ones, read across flat index 2^31; the corpus's 32-bit column max is rejected by it.
TEST(IndexWidthReduce, TheLibraryColumnMaxAndArgmaxPassAndA32BitColumnMaxIsRejected) {
  for (const char* name : {"reduce.max_axis0", "reduce.argmax_axis0"}) {
    const auto r = test::kforge_cli(std::string("verify ") + name + " --backend cpu --size M=37,N=45 --index-width --json");
    ASSERT_EQ(r.exit_code, 0) << name << r.out << r.err;
    const auto j = test::parse_or_fail(r);
    EXPECT_TRUE(test::index_width_ran(j.is_array() ? j.at(0) : j)) << name << r.out;
  }
  const std::string wrong = std::string(KFORGE_TEST_DATA) + "/../verify/wrong/reduce_int32_column_index.cpp";
  const auto bad = test::kforge_cli("eval --problem reduce.max_axis0 --lang cpp --entry max_axis0 --source " + wrong +
                                    " --grid 'ceil_div(N,64)' --size M=37,N=1000 --json");
  const auto b = test::parse_or_fail(bad);
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_TRUE(b.value("disposition", "") == "crashed" || b.value("disposition", "") == "incorrect") << bad.out;
  EXPECT_EQ(b.value("verify", nlohmann::json::object()).value("failed_check", ""), "index_width") << bad.out;
}

}  // namespace
}  // namespace kforge
