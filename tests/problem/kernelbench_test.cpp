// KernelBench problem files under kforge's verdict (docs/kernelbench.md), with problem files
// written for these tests (tests/data/kernelbench/): the ABI kforge derives, correct kernels
// passing both verdicts, wrong kernels that KernelBench's own check passes rejected by kforge
// with the check that caught them, sizes that do not fit refused with sizes that do, and a
// reference that raises or hangs reported as the problem's fault (exit 2).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace kforge {
namespace {

std::string kb(const std::string& f) { return std::string(KFORGE_TEST_DATA) + "/kernelbench/" + f; }
std::string cli() { return std::string("'") + KFORGE_CLI_PATH + "'"; }

// The bridge needs torch in the interpreter kforge runs ($KFORGE_PYTHON, else /usr/bin/python3,
// else python3); a machine without it skips (tools/install-deps installs Debian's python3-torch).
bool have_torch() {
  static const bool ok = [] {
    std::string python = "python3";
    if (const char* e = std::getenv("KFORGE_PYTHON"); e && *e) python = e;
    else if (access("/usr/bin/python3", X_OK) == 0) python = "/usr/bin/python3";
    return test::run_command("'" + python + "' -c 'import torch'").exit_code == 0;
  }();
  return ok;
}
// A failure, not a skip: CI installs torch (tools/install-deps), and a skip there would hide
// that none of these ran.
#define REQUIRE_TORCH() \
  if (!have_torch()) GTEST_FAIL() << "torch is not installed (tools/install-deps installs python3-torch)"

TEST(KernelBench, ListPrintsTheDerivedAbi) {
  REQUIRE_TORCH();
  const auto r = test::run_command(cli() + " list --problem " + kb("4_conv1d.py") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& j = doc["problems"][0];
  EXPECT_EQ(j["name"], "kb.4_conv1d");
  // get_inputs()'s tensors, then the Model's parameters, then forward's output, then the sizes.
  EXPECT_EQ(j["abi"]["cpp"], "(const T* x, const T* conv_weight, const T* conv_bias, T* out, int batch_size, "
                             "int in_channels, int out_channels, int kernel_size, int length)");
  const auto& at = j["at"];
  EXPECT_EQ(at["tensors"][1]["shape"], nlohmann::json({4, 3, 3}));
  EXPECT_EQ(at["tensors"][3]["shape"], nlohmann::json({2, 4, 30}));
  EXPECT_DOUBLE_EQ(at["flops"].get<double>(), 2.0 * 2 * 4 * 30 * 3 * 3);  // 2 per multiply-add
  // A derived constant (out_features = in_features // 2) follows its base instead of being a size;
  // an integer input gets the index range get_inputs() draws from.
  const auto lin = test::run_command(cli() + " list --problem " + kb("5_linear_tanh.py") +
                                     " --size in_features=10 --run-reference --json");
  ASSERT_EQ(lin.exit_code, 0) << lin.err;
  const auto lin_doc = nlohmann::json::parse(lin.out);
  const auto& lj = lin_doc["problems"][0];
  EXPECT_EQ(lj["sizes"], nlohmann::json({{"batch", 4}, {"in_features", 32}}));
  EXPECT_EQ(lj["at"]["tensors"][1]["shape"], nlohmann::json({5, 10}));
  EXPECT_TRUE(lj["at"]["reference_ran"].get<bool>());
  const auto ce = test::run_command(cli() + " list --problem " + kb("6_cross_entropy.py") + " --size num_classes=7 --json");
  ASSERT_EQ(ce.exit_code, 0) << ce.err;
  const auto ce_doc = nlohmann::json::parse(ce.out);
  const auto& targets = ce_doc["problems"][0]["at"]["tensors"][1];
  EXPECT_EQ(targets["condition"], "index");
  EXPECT_EQ(targets["range"], nlohmann::json({0.0, 7.0}));
}

// Runs `kforge kernelbench` over the test level with `solutions`; rows by problem file.
std::map<std::string, nlohmann::json> level_run(const std::string& solutions, int& exit_code) {
  const auto r = test::run_command(cli() + " kernelbench " + kb("") + " --solutions " + kb(solutions) +
                                   " --eager-runs 3 --json");
  exit_code = r.exit_code;
  std::map<std::string, nlohmann::json> rows;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  if (j.is_discarded()) return rows;
  for (const auto& row : j["problems"]) rows[row["file"].get<std::string>()] = row;
  return rows;
}

TEST(KernelBench, CorrectKernelsPassBothVerdicts) {
  REQUIRE_TORCH();
  int code = -1;
  const auto rows = level_run("solutions", code);
  EXPECT_EQ(code, 0);
  ASSERT_EQ(rows.size(), 7u);
  for (const auto& [file, row] : rows) {
    EXPECT_EQ(row["kernelbench_verdict"], "passed") << file << ": " << row.dump();
    EXPECT_EQ(row["kforge_verdict"], "passed") << file << ": " << row.dump();
    EXPECT_GT(row["time_s"].get<double>(), 0) << file;
    EXPECT_GT(row["torch_eager_s"].get<double>(), 0) << file;
  }
}

TEST(KernelBench, WrongKernelsThatKernelBenchPassesAreRejected) {
  REQUIRE_TORCH();
  int code = -1;
  const auto rows = level_run("wrong", code);
  EXPECT_EQ(code, 1);
  // Each wrong kernel, the check that must catch it, and where.
  const std::map<std::string, std::string> expected{
      {"1_relu.py", "bound"},            // x for relu(x): wrong for every negative input
      {"2_row_sum.py", "shapes"},        // the default row stride hard-coded: wrong (bound) at fuzzed dim1
      {"3_matmul.py", "shapes"},         // a K tail dropped: all zeros (all_zero) at the fuzzed K=1
      {"4_conv1d.py", "bound"},          // weights cut to 11 bits: 1e-3 errors
      {"6_cross_entropy.py", "shapes"}};  // a batch tail dropped: wrong (bound) where batch % 4 != 0
  for (const auto& [file, check] : expected) {
    ASSERT_TRUE(rows.count(file)) << file;
    const auto& row = rows.at(file);
    EXPECT_EQ(row["kernelbench_verdict"], "passed") << file << ": " << row.dump();
    EXPECT_EQ(row["kforge_verdict"], "incorrect") << file << ": " << row.dump();
    EXPECT_EQ(row["kforge_failed_check"], check) << file << ": " << row.dump();
  }
  EXPECT_FALSE(rows.at("5_linear_tanh.py")["solution"].get<bool>());
  EXPECT_FALSE(rows.at("7_layer_norm.py")["solution"].get<bool>());
}

TEST(KernelBench, KernelsBesideTheFileAreVerifiedAndTuned) {
  REQUIRE_TORCH();
  // 3_matmul_tiled.json names kb.3_matmul: verify and tune find it as the problem's kernel.
  const auto v = test::run_command(cli() + " verify " + kb("3_matmul.py") + " --size M=37,K=19,N=29 --json");
  ASSERT_EQ(v.exit_code, 0) << v.out << v.err;
  const auto vj = nlohmann::json::parse(v.out);
  const auto& r = vj.is_array() ? vj[0] : vj;
  EXPECT_EQ(r["kernel"], "kb.3_matmul.tiled");
  EXPECT_EQ(r["disposition"], "passed");
  const auto t = test::run_command(cli() + " tune " + kb("3_matmul.py") + " --budget 2 --strategy brute");
  EXPECT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("vs torch eager"), std::string::npos) << t.out;
}

TEST(KernelBench, SizesThatDoNotFitAreRefusedWithSizesThatDo) {
  REQUIRE_TORCH();
  const std::string env = "KFORGE_KB_MEMORY_GIB=0.001 ";
  const auto r = test::run_command(env + cli() + " eval --problem " + kb("3_matmul.py") + " --source " +
                                   kb("solutions/3_matmul.cpp") + " --lang cpp --size M=4096,K=4096,N=4096");
  EXPECT_EQ(r.exit_code, 2);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("try --size (\\S+)"))) << r.err;
  EXPECT_NE(r.err.find("more than the budget"), std::string::npos) << r.err;
  const auto fits = test::run_command(env + cli() + " eval --problem " + kb("3_matmul.py") + " --source " +
                                      kb("solutions/3_matmul.cpp") + " --lang cpp --quick --size " + m[1].str());
  EXPECT_EQ(fits.exit_code, 0) << m[1].str() << "\n" << fits.out << fits.err;
}

TEST(KernelBench, ReferenceThatRaisesIsTheProblemsFault) {
  REQUIRE_TORCH();
  const auto r = test::run_command(cli() + " list --problem " + kb("broken/bad_raises.py"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("broken on purpose"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad_raises.py"), std::string::npos) << r.err;
}

TEST(KernelBench, ReferenceThatHangsIsTheProblemsFault) {
  REQUIRE_TORCH();
  const auto r = test::run_command("KFORGE_KB_TIMEOUT_S=4 " + cli() + " eval --problem " + kb("broken/bad_hangs.py") +
                                   " --source " + kb("broken/twice.cpp") + " --lang cpp --entry twice --quick");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("ran past its 4 s limit"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad_hangs.py"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge
