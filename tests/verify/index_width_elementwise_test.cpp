// The index_width check for the row-wise families whose output grows with their input
// (activation.*, softmax, rmsnorm, layernorm): X and Y past 2^31 elements. The real check writes
// Y whole (4 GiB in bf16, the dtype used here) and compares its live rows and sampled windows;
// where the memory is short (or KFORGE_INDEX_WIDTH_PROXY=1), the proxy folds Y's earlier rows
// onto 16 MiB and compares the live rows alone. Both reject an activation with a 32-bit flat
// index (tests/verify/wrong/activation_int32_flat_index.cpp) and pass its 64-bit twin
// (tests/data/relu_64bit_index.cpp) and the library's kernel. A few seconds each.
#include <gtest/gtest.h>

#include "kforge/backend.hpp"
#include "kforge/problem.hpp"
#include "kforge/verify.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

const char* const kRowWise[] = {"activation.relu",
                                "activation.leaky_relu",
                                "activation.gelu_erf",
                                "activation.gelu_tanh",
                                "activation.silu",
                                "softmax",
                                "rmsnorm",
                                "layernorm"};

TEST(IndexWidthElementwise, RowWiseFamiliesDeclareAnInputAndAnOutputPast2To31Elements) {
  for (const char* name : kRowWise) {
    const auto p = find_problem(name);
    const auto w = p->wide_index_shape(p->default_sizes());
    ASSERT_FALSE(w.sizes.empty()) << name;
    const auto specs = p->tensors();
    EXPECT_GT(p->tensor_elements(0, w.sizes), std::int64_t{1} << 31) << name << ": X";
    EXPECT_GT(p->tensor_elements(specs.size() - 1, w.sizes), std::int64_t{1} << 31) << name << ": Y";
    // The last live row starts past flat index 2^31: where a 32-bit i * N has wrapped.
    EXPECT_GE((w.sizes.at("M") - 1) * w.sizes.at("N"), std::int64_t{1} << 31) << name;
    EXPECT_EQ(w.live.at("N"), w.sizes.at("N")) << name;
    // What it takes: Y written whole (the resident part), X mapped.
    const WideIndexBytes b = wide_index_bytes(*p, w, DType::bf16);
    EXPECT_GT(b.resident, 4.0 * (1 << 30)) << name;
    EXPECT_LT(b.resident, 4.1 * (1 << 30)) << name;
    EXPECT_GT(b.address, 8.0 * (1 << 30)) << name;
  }
}

std::string index_width_detail(const nlohmann::json& res) {
  for (const auto& c : res.at("verify").at("checks"))
    if (c.value("name", "") == "index_width") return c.value("detail", "");
  return "(no index_width check)";
}

const std::string kWrong = std::string(KFORGE_TEST_DATA) + "/../verify/wrong/activation_int32_flat_index.cpp";
const std::string kTwin = std::string(KFORGE_TEST_DATA) + "/relu_64bit_index.cpp";

test::CommandResult eval_relu(const std::string& source, const std::string& env) {
  return test::run_command(env + " '" + KFORGE_CLI_PATH + "' eval --problem activation.relu --lang cpp --entry relu" +
                           " --source " + source + " --grid 'ceil_div(M,16)' --size M=37,N=45 --dtype bf16 --json");
}

void expect_rejected_by_index_width(const test::CommandResult& r) {
  const auto j = test::parse_or_fail(r);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(j.value("disposition", "") == "crashed" || j.value("disposition", "") == "incorrect") << r.out;
  EXPECT_EQ(j.value("verify", nlohmann::json::object()).value("failed_check", ""), "index_width") << r.out;
}

void expect_passed_index_width(const test::CommandResult& r, const std::string& mode) {
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = test::parse_or_fail(r);
  const nlohmann::json& doc = j.is_array() ? j.at(0) : j;
  EXPECT_EQ(doc.value("disposition", ""), "passed") << r.out;
  const std::string d = index_width_detail(doc);
  EXPECT_EQ(d.rfind("passed at", 0), 0u) << d;
  EXPECT_NE(d.find(mode), std::string::npos) << d;
}

TEST(IndexWidthElementwise, TheProxyRejectsA32BitFlatIndexAndPassesItsTwin) {
  expect_rejected_by_index_width(eval_relu(kWrong, "KFORGE_INDEX_WIDTH_PROXY=1"));
  expect_passed_index_width(eval_relu(kTwin, "KFORGE_INDEX_WIDTH_PROXY=1"), "proxy");
}

TEST(IndexWidthElementwise, TheRealCheckRejectsA32BitFlatIndexWhereMemoryAllows) {
  // Where 4 GiB is not available the proxy runs instead (the detail says which).
  expect_rejected_by_index_width(eval_relu(kWrong, ""));
}

TEST(IndexWidthElementwise, TheLibraryKernelPassesTheRealCheckWhereMemoryAllows) {
  const auto r =
      test::kforge_cli("verify activation.silu --backend cpu --size M=37,N=45 --dtype bf16 --index-width --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = test::parse_or_fail(r);
  const std::string d = index_width_detail(j.is_array() ? j.at(0) : j);
  EXPECT_EQ(d.rfind("passed at", 0), 0u) << d;
  EXPECT_TRUE(d.find("sampled windows") != std::string::npos || d.find("proxy") != std::string::npos) << d;
}

// OpenCL on a device in the host's memory (PoCL): the same wide run, buffers lent from our own
// mappings (the opencl backend's sparse buffers). The proxy keeps it to seconds and 16 MiB: the
// 32-bit twin in OpenCL C (tests/verify/wrong/activation_int32_flat_index.cl) is rejected, the
// library's activation.cl passes.
#ifdef KFORGE_WITH_OPENCL
TEST(IndexWidthElementwise, OnAnOpenClDeviceInHostMemoryTheProxyRejectsA32BitIndexAndPassesTheLibrary) {
  const auto b = make_backend("opencl");
  if (!b->can_run() || !b->sparse_buffers()) GTEST_SKIP() << "no OpenCL device in the host's memory";
  const std::string common = "KFORGE_INDEX_WIDTH_PROXY=1 '" + std::string(KFORGE_CLI_PATH) +
                             "' eval --problem activation.relu --lang opencl --entry relu --size M=37,N=45 --dtype bf16 --json";
  const std::string wrong = std::string(KFORGE_TEST_DATA) + "/../verify/wrong/activation_int32_flat_index.cl";
  expect_rejected_by_index_width(test::run_command(common + " --source " + wrong + " --grid 'ceil_div(N,64),M' --block 64"));
  const std::string lib = std::string(KFORGE_TEST_DATA) + "/../../kernels/activation/";
  expect_passed_index_width(
      test::run_command(common + " --source " + lib + "activation.cl --spec " + lib + "relu_opencl.json"), "proxy");
}
#endif

}  // namespace
}  // namespace kforge
