// The index_width check for the scan family: every (batch, time) tensor past 2^31 elements
// (batch = 2^16 + 1, time = 2^15), the last two sequences live. Run here through its proxy
// (KFORGE_INDEX_WIDTH_PROXY=1: x's earlier rows folded onto 16 MiB, so the test does not need
// the 10 GiB the real check writes): a scan with a 32-bit flat index
// (tests/verify/wrong/scan_int32_flat_index.cpp) is rejected, its 64-bit twin
// (tests/data/scan_linear_64bit_index.cpp) and the library's kernels pass.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kforge/problem.hpp"
#include "kforge/verify.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

TEST(IndexWidthScan, EveryScanProblemDeclaresItsTensorsPast2To31Elements) {
  for (const char* name : {"scan.linear", "scan.linear_rev", "scan.discounted_return", "scan.gae", "scan.td_lambda",
                           "scan.vtrace", "scan.retrace", "scan.tree_backup", "scan.nstep"}) {
    const auto p = find_problem(name);
    const auto w = p->wide_index_shape(p->default_sizes());
    ASSERT_FALSE(w.sizes.empty()) << name;
    EXPECT_NO_THROW(p->check_sizes(w.sizes)) << name;
    // The last live sequence starts past flat index 2^31: where a 32-bit s * time has wrapped.
    EXPECT_GE((w.sizes.at("batch") - 1) * w.sizes.at("time"), std::int64_t{1} << 31) << name;
    EXPECT_EQ(w.live.at("time"), w.sizes.at("time")) << name;
    const WideIndexBytes b = wide_index_bytes(*p, w, DType::fp32);
    EXPECT_GT(b.resident, 8.0 * (1 << 30)) << name << ": the output is written whole";
    EXPECT_LT(b.resident, 8.1 * (1 << 30)) << name << ": one output";
  }
}

std::string index_width_detail(const nlohmann::json& res) {
  for (const auto& c : res.at("verify").at("checks"))
    if (c.value("name", "") == "index_width") return c.value("detail", "");
  return "(no index_width check)";
}

test::CommandResult eval_scan(const std::string& source) {
  return test::run_command("KFORGE_INDEX_WIDTH_PROXY=1 '" + std::string(KFORGE_CLI_PATH) +
                           "' eval --problem scan.linear --lang cpp --entry scan_linear --source " + source +
                           " --grid batch --size batch=5,time=64 --json");
}

// The end-to-end runs write 2^31 elements each (into folded pages: page faults, not memory):
// 23 to 67 s on the loaded 2-core host, more than a default test may take, so they are the
// `long` suite IndexWidthScanLong (KFORGE_INDEX_WIDTH_LONG=1 ctest -L long -R IndexWidthScanLong).
bool long_asked() {
  const char* v = std::getenv("KFORGE_INDEX_WIDTH_LONG");
  return v && std::string(v) == "1";
}

TEST(IndexWidthScanLong, TheProxyRejectsA32BitFlatIndexAndPassesItsTwin) {
  if (!long_asked()) GTEST_SKIP() << "set KFORGE_INDEX_WIDTH_LONG=1 (about a minute)";
  const auto r = eval_scan(std::string(KFORGE_TEST_DATA) + "/../verify/wrong/scan_int32_flat_index.cpp");
  const auto j = test::parse_or_fail(r);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(j.value("disposition", "") == "crashed" || j.value("disposition", "") == "incorrect") << r.out;
  EXPECT_EQ(j.value("verify", nlohmann::json::object()).value("failed_check", ""), "index_width") << r.out;

  const auto twin = eval_scan(std::string(KFORGE_TEST_DATA) + "/scan_linear_64bit_index.cpp");
  ASSERT_EQ(twin.exit_code, 0) << twin.out << twin.err;
  const std::string d = index_width_detail(test::parse_or_fail(twin));
  EXPECT_EQ(d.rfind("passed at", 0), 0u) << d;
  EXPECT_NE(d.find("proxy"), std::string::npos) << d;
}

TEST(IndexWidthScanLong, TheLibraryKernelPassesThroughTheProxy) {
  if (!long_asked()) GTEST_SKIP() << "set KFORGE_INDEX_WIDTH_LONG=1 (about 20 s)";
  const auto r = test::run_command("KFORGE_INDEX_WIDTH_PROXY=1 '" + std::string(KFORGE_CLI_PATH) +
                                   "' verify scan.gae --backend cpu --size batch=5,time=64 --index-width --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = test::parse_or_fail(r);
  const std::string d = index_width_detail(j.is_array() ? j.at(0) : j);
  EXPECT_EQ(d.rfind("passed at", 0), 0u) << d;
}

}  // namespace
}  // namespace kforge
