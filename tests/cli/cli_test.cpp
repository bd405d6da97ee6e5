// The `kforge` command as a user runs it: JSON that parses, the fields scripts rely on, and
// exit codes that mean something (0 ok, 1 a kernel failed a gate, 2 bad usage or input).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace kforge {
namespace {

using test::kforge_cli;
using test::parse_or_fail;
using nlohmann::json;

const std::string kSmall = "--size M=37,N=29,K=41 --threads 2";

TEST(Cli, ListJsonNamesGemmItsKernelsAndTheCpuBackend) {
  const auto r = kforge_cli("list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = parse_or_fail(r);
  const json* gemm = nullptr;
  for (const auto& p : doc.at("problems"))
    if (p.at("name") == "gemm") gemm = &p;
  ASSERT_NE(gemm, nullptr) << doc.dump(2);
  ASSERT_TRUE(gemm->contains("kernels"));
  bool cpp_kernel = false;
  for (const auto& k : gemm->at("kernels")) {
    EXPECT_TRUE(k.contains("params"));
    EXPECT_GE(k.at("space_size").get<std::uint64_t>(), 1u);
    cpp_kernel = cpp_kernel || k.at("lang") == "cpp";
  }
  EXPECT_TRUE(cpp_kernel) << "gemm should have a cpp kernel";
  bool cpu = false;
  for (const auto& b : doc.at("backends"))
    if (b.at("name") == "cpu") cpu = b.at("can_run").get<bool>();
  EXPECT_TRUE(cpu) << doc.at("backends").dump();
}

TEST(Cli, VerifyPassesWithTheRequiredFields) {
  const auto r = kforge_cli("verify gemm --backend cpu " + kSmall + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = parse_or_fail(r);
  for (const char* field : {"problem", "kernel", "backend", "device", "sizes", "params", "disposition"})
    EXPECT_TRUE(j.contains(field)) << "missing '" << field << "' in " << j.dump(2);
  EXPECT_EQ(j.value("disposition", ""), "passed");
  EXPECT_EQ(j.value("problem", ""), "gemm");
  EXPECT_EQ(j.value("backend", ""), "cpu");
  EXPECT_EQ(j.at("sizes"), (json{{"M", 37}, {"N", 29}, {"K", 41}}));
  EXPECT_FALSE(j.at("params").empty());
  EXPECT_TRUE(j.at("verify").at("passed").get<bool>());
}

TEST(Cli, AScalarTheUserFixesIsUsedAndReported) {
  const auto r = kforge_cli("verify gemm --backend cpu " + kSmall + " --scalar alpha=2,beta=0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = parse_or_fail(r);
  EXPECT_EQ(j.at("scalars"), (json{{"alpha", 2.0}, {"beta", 0.0}})) << j.dump(2);
}

TEST(Cli, VerifyHumanOutputSaysPassed) {
  const auto r = kforge_cli("verify gemm " + kSmall + " --dtype bf16");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("passed"), std::string::npos) << r.out;
}

TEST(Cli, BenchJsonHasTimingAndSpeedOfLight) {
  const auto r = kforge_cli("bench gemm --backend cpu " + kSmall + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = parse_or_fail(r);
  EXPECT_EQ(j.value("disposition", ""), "passed");
  for (const char* field : {"median_s", "min_s", "stdev_s", "repetitions", "gflops", "sol_fraction"})
    ASSERT_TRUE(j.contains(field)) << "missing '" << field << "' in " << j.dump(2);
  const double median = j.at("median_s"), min = j.at("min_s");
  EXPECT_GT(min, 0.0);
  EXPECT_LE(min, median);
  EXPECT_GE(j.at("stdev_s").get<double>(), 0.0);
  EXPECT_GE(j.at("repetitions").get<int>(), 1);
  // GFLOP/s is the problem's 2·M·N·K over the median.
  EXPECT_NEAR(j.at("gflops").get<double>(), 2.0 * 37 * 29 * 41 / median * 1e-9,
              1e-6 * j.at("gflops").get<double>());
  const double sol = j.at("sol_fraction");
  EXPECT_GT(sol, 0.0);
  EXPECT_LE(sol, 1.5) << "a kernel far above the machine's measured ceiling";
}

// --kernel NAME runs that library kernel, one the library never picks by itself (spmm_adaptive.cpu
// is listed after spmm.cpu and has no "applies"); the JSON names it.
TEST(Cli, VerifyKernelRunsTheNamedLibraryKernel) {
  const std::string sizes = " --size M=23,K=29,N=37,NNZ=101 --threads 2 --quick --json";
  const auto picked = kforge_cli("verify spmm --backend cpu" + sizes);
  ASSERT_EQ(picked.exit_code, 0) << picked.out << picked.err;
  EXPECT_EQ(parse_or_fail(picked).value("kernel", ""), "spmm.cpu");
  const auto named = kforge_cli("verify spmm --backend cpu --kernel spmm_adaptive.cpu" + sizes);
  ASSERT_EQ(named.exit_code, 0) << named.out << named.err;
  const json j = parse_or_fail(named);
  EXPECT_EQ(j.value("kernel", ""), "spmm_adaptive.cpu");
  EXPECT_EQ(j.value("disposition", ""), "passed");
  // bench goes through the same pick.
  const auto bench = kforge_cli("bench spmm --backend cpu --kernel spmm_adaptive.cpu --no-baseline" + sizes);
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  EXPECT_EQ(parse_or_fail(bench).value("kernel", ""), "spmm_adaptive.cpu");
}

// An unknown name, or a name of another language than the backend's, is exit 2 listing the
// problem's kernels with their languages.
TEST(Cli, VerifyKernelRefusesAnUnknownOrWrongLanguageNameListingTheKernels) {
  const auto unknown = kforge_cli("verify spmm --backend cpu --kernel spmm_fast.cpu");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out << unknown.err;
  EXPECT_NE(unknown.err.find("spmm_fast.cpu"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("spmm_adaptive.cpu (cpp)"), std::string::npos) << unknown.err;
  const auto wrong_lang = kforge_cli("verify spmm --backend cpu --kernel spmm.opencl");
  EXPECT_EQ(wrong_lang.exit_code, 2) << wrong_lang.out << wrong_lang.err;
  EXPECT_NE(wrong_lang.err.find("--kernel spmm.opencl names no cpp kernel"), std::string::npos) << wrong_lang.err;
  EXPECT_NE(wrong_lang.err.find("spmm.cpu (cpp)"), std::string::npos) << wrong_lang.err;
  const auto unused = kforge_cli("verify spmm --backend cpu --kernel spmm.cpu,spmm.opencl");
  EXPECT_EQ(unused.exit_code, 2) << unused.out << unused.err;
  EXPECT_NE(unused.err.find("spmm.opencl is a kernel for a backend not asked for"), std::string::npos) << unused.err;
  const auto two = kforge_cli("verify spmm --backend cpu --kernel spmm.cpu,spmm_adaptive.cpu");
  EXPECT_EQ(two.exit_code, 2) << two.out << two.err;
  EXPECT_NE(two.err.find("two cpp kernels"), std::string::npos) << two.err;
}

struct BadInput {
  const char* args;
  const char* named;  // what the message must mention
};

class CliUsage : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliUsage, ExitsTwoNamingTheBadInput) {
  const auto r = kforge_cli(GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << GetParam().args << "\n" << r.out << r.err;
  EXPECT_NE(r.err.find(GetParam().named), std::string::npos)
      << "stderr should name '" << GetParam().named << "':\n" << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, CliUsage,
    ::testing::Values(BadInput{"verify nosuchproblem", "nosuchproblem"},
                      BadInput{"verify gemm --dtype fp8", "fp8"},
                      BadInput{"verify gemm --size M37", "M37"},
                      BadInput{"verify gemm --size M=abc", "M=abc"},
                      BadInput{"verify gemm --size Q=3", "Q"},
                      BadInput{"verify gemm --size M=0", "M=0"},
                      BadInput{"verify gemm --params NOPE=4", "NOPE"},
                      BadInput{"verify gemm --backend tpu", "tpu"},
                      BadInput{"verify gemm --scalar gamma=0.5", "gamma"},
                      BadInput{"verify gemm --scalar alpha=two", "alpha=two"},
                      BadInput{"verify scan.gae --scalar lambda=1.5", "lambda"},
                      BadInput{"verify scan.discounted_return --scalar gamma=-0.1", "gamma"},
                      BadInput{"eval --problem gemm --lang cpp --source /nonexistent/k.cpp", "/nonexistent/k.cpp"},
                      BadInput{"eval --problem gemm --lang rust --source /dev/null", "rust"}));

std::string eval_args(const std::string& data_name, const std::string& grid = "ceil_div(M,16)") {
  return "eval --problem gemm --lang cpp --source '" + test::data_path(data_name) + "' --grid '" +
         grid + "' " + kSmall + " --json";
}

TEST(Cli, EvalOfACorrectSourceExitsZero) {
  const auto r = kforge_cli(eval_args("naive_gemm.cpp"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(parse_or_fail(r).value("disposition", ""), "passed");
}

TEST(Cli, EvalGridListsExpressionsWithCommasInside) {
  // 'ceil_div(M,16),1,1' is three expressions; the commas inside the call do not split it.
  const auto r = kforge_cli(eval_args("naive_gemm.cpp", "ceil_div(M,16),1,1"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(parse_or_fail(r).value("disposition", ""), "passed");
}

TEST(Cli, EvalOfAnIncorrectSourceExitsOne) {
  const auto r = kforge_cli(eval_args("tail_skip.cpp"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json j = parse_or_fail(r);
  EXPECT_EQ(j.value("disposition", ""), "incorrect");
  EXPECT_NE(j.value("error", "").find("never written"), std::string::npos) << j.dump(2);
}

TEST(Cli, EvalOfASourceThatDoesNotCompileExitsOneWithTheLog) {
  const auto r = kforge_cli(eval_args("syntax_error.cpp"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json j = parse_or_fail(r);
  EXPECT_EQ(j.value("disposition", ""), "compile_error");
  EXPECT_NE(j.value("compile_log", "").find("undeclared_thing_kf"), std::string::npos) << j.dump(2);
}

// docs/tuning.md recommends bayes as the default; `kforge tune` without --strategy must run it,
// and --help must say so. A replay (no hardware) shows which strategy ran.
TEST(Cli, TuneDefaultsToBayes) {
  const auto r = kforge_cli("tune --replay " + std::string(KFORGE_TEST_DATA) + "/tiny_kt_cache.json --budget 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_or_fail(r).at("strategy"), "bayes");
  const auto help = kforge_cli("tune --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--strategy TEXT=bayes"), std::string::npos) << help.out;
}

TEST(Cli, HelpExitsZero) {
  const auto r = kforge_cli("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("verify"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kforge
