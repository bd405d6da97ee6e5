// The index_width check beyond gemm: reduce's row reductions and its column sum declare a wide
// instance (X past 2^31 elements, zeros but its last two rows), a row sum with a 32-bit row start
// is rejected by it, and the library's kernels (64-bit indices) pass it. Each run maps 8 GiB of never-backed
// address space and reads it through the shared zero page: a few seconds.
#include <gtest/gtest.h>

#include "kforge/problem.hpp"
#include "test_util.hpp"

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
  for (const char* name : {"reduce.max_axis0", "reduce.argmax_axis0"})
    EXPECT_TRUE(find_problem(name)->wide_index_shape({}).sizes.empty()) << name << ": zero rows change a column's max";
  // The column sum: X past 2^31 elements along the reduced axis, Y (N) the live rows' sums.
  const auto sum0 = find_problem("reduce.sum_axis0");
  const auto w = sum0->wide_index_shape({});
  ASSERT_FALSE(w.sizes.empty());
  EXPECT_GT(sum0->tensor_elements(0, w.sizes), std::int64_t{1} << 31);
  EXPECT_EQ(sum0->tensor_elements(1, w.sizes), sum0->tensor_elements(1, w.live)) << "Y does not grow";
}

bool index_width_ran(const nlohmann::json& doc) {
  for (const auto& c : doc.at("verify").at("checks"))
    if (c.value("name", "") == "index_width" && c.value("passed", false) &&
        c.value("detail", "").rfind("passed at", 0) == 0)
      return true;
  return false;
}

// The library's column sum through the wide run: every column sums 2^16 - 1 zero rows and two
// live ones, read across flat index 2^31.
TEST(IndexWidthReduce, TheLibraryColumnSumPasses) {
  const auto r = test::kforge_cli("verify reduce.sum_axis0 --backend cpu --size M=37,N=45 --index-width --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = test::parse_or_fail(r);
  EXPECT_TRUE(index_width_ran(j.is_array() ? j.at(0) : j)) << r.out;
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
  EXPECT_TRUE(index_width_ran(doc)) << "index_width did not run:\n" << good.out;
}

}  // namespace
}  // namespace kforge
