// Every library cpu kernel of the dense families (gemm, the conv2d layouts, attention, moe), compiled for
// x86-64-v3 (AVX2, FMA, F16C: no AVX-512) through $KFORGE_CPU_MARCH and verified with
// `kforge verify --quick` at small shapes that are multiples of no tile: a kernel that needs
// AVX-512 to compile, or to be right, fails here on this AVX-512 machine before a user without
// AVX-512 finds out. gemm runs in all three dtypes (bf16 has its own dot-product path where the
// CPU has AVX-512 BF16; its fallback is what runs here).
//
// KFORGE_AVX2_ALL=1 also verifies every other library problem's cpu kernel (at its default
// sizes, --quick): a few minutes, so not in the default run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "kforge/problem.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

constexpr const char* kMarch = "x86-64-v3";

struct Case {
  const char* problem;
  const char* kernel;  // the cpu kernel these sizes select
  const char* sizes;
  const char* dtype;
  const char* params = "";  // beyond the defaults
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.problem << " " << c.sizes << " " << c.dtype << " " << c.params;
}

// The defaults (VW = 0: 8 floats without AVX-512), and VW = 16 where a kernel has its own code
// for 512-bit vectors: without AVX-512 they must still compile, as pairs of 256-bit operations.
const Case kCases[] = {
    {"gemm", "gemm.cpu", "M=67,N=45,K=401", "fp32"},  // K > KC: two slices
    {"gemm", "gemm.cpu", "M=67,N=45,K=401", "bf16", "VW=16"},
    {"gemm", "gemm.cpu", "M=37,N=51,K=29", "fp16"},
    {"conv2d", "conv2d_c1.cpu", "N=1,C=1,H=19,W=23,K=9,R=3,S=3,stride=1,pad=1,dil=1", "fp32"},
    {"conv2d", "conv2d_c1.cpu", "N=1,C=1,H=19,W=37,K=9,R=3,S=3,stride=1,pad=1,dil=1", "fp32", "VW=16"},
    {"conv2d", "conv2d_1x1.cpu", "N=1,C=24,H=9,W=11,K=20,R=1,S=1,stride=1,pad=0,dil=1", "fp32"},
    {"conv2d", "conv2d.cpu", "N=1,C=5,H=13,W=11,K=17,R=3,S=3,stride=1,pad=1,dil=1", "fp32", "VW=16"},
    {"conv2d_nchw8c", "conv2d_nchw8c.cpu", "N=1,C=16,H=13,W=11,K=24,R=3,S=3,stride=1,pad=1,dil=1", "fp32"},
    {"conv2d_nchw8c", "conv2d_nchw8c.cpu", "N=1,C=8,H=9,W=10,K=16,R=3,S=2,stride=2,pad=1,dil=1", "bf16"},
    {"conv2d_nchw8c_xplain", "conv2d_nchw8c_xplain.cpu", "N=1,C=3,H=19,W=23,K=16,R=7,S=7,stride=2,pad=3,dil=1", "fp32"},
    {"attention", "attention.cpu", "B=1,H=2,HKV=1,S=67,D=64", "fp32"},
    {"attention.causal", "attention.cpu", "B=1,H=2,HKV=1,S=67,D=64", "bf16"},
    {"moe_grouped_gemm", "moe_grouped_gemm.cpu", "T=37,H=64,F=48,E=4,K=2", "fp32"},
};

const std::set<std::string> kDenseProblems = {"gemm", "conv2d", "conv2d_nchw8c", "conv2d_nchw8c_xplain", "attention", "attention.causal",
                                              "moe_grouped_gemm"};

// x86-64-v3 code runs only on a CPU that has AVX2, FMA and F16C (any x86-64 CI runner since 2015).
bool can_run_x86_64_v3() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

test::CommandResult verify_for_avx2(const std::string& args) {
  return test::run_command(std::string("KFORGE_CPU_MARCH=") + kMarch + " '" + KFORGE_CLI_PATH +
                           "' verify " + args + " --backend cpu --quick --json");
}

// A new cpu kernel in a dense family needs a case above, or it would go unchecked.
TEST(Avx2Only, EveryDenseCpuKernelHasACase) {
  for (const auto& p : problems()) {
    if (!kDenseProblems.count(p->name())) continue;
    for (const auto& k : library_kernels(*p)) {
      if (k.lang != Lang::cpp) continue;
      const bool covered = std::any_of(std::begin(kCases), std::end(kCases), [&](const Case& c) {
        return c.problem == p->name() && c.kernel == k.name;
      });
      EXPECT_TRUE(covered) << p->name() << "'s cpu kernel " << k.name
                           << " has no case in tests/kernels/avx2_only_test.cpp: add sizes that select it";
    }
  }
}

class Avx2OnlyKernel : public ::testing::TestWithParam<Case> {};

TEST_P(Avx2OnlyKernel, VerifiesCompiledWithoutAvx512) {
  if (!can_run_x86_64_v3()) GTEST_SKIP() << "this CPU cannot run x86-64-v3 code";
  const Case& c = GetParam();
  std::string args = std::string(c.problem) + " --size " + c.sizes + " --dtype " + c.dtype;
  if (*c.params) args += std::string(" --params ") + c.params;
  const auto r = verify_for_avx2(args);
  const auto j = test::parse_or_fail(r);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;  // one backend: one result
  const auto& e = j;
  EXPECT_EQ(e.value("kernel", ""), c.kernel) << "these sizes no longer select " << c.kernel;
  EXPECT_NE(e.value("device", "").find(std::string("-march=") + kMarch), std::string::npos) << e.dump();
  EXPECT_EQ(e.value("disposition", ""), "passed") << e.value("error", "") << "\n" << e.value("compile_log", "");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = std::string(info.param.problem) + "_" + info.param.kernel + "_" + info.param.dtype + "_" +
                  (*info.param.params ? info.param.params : "defaults");
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(DenseFamilies, Avx2OnlyKernel, ::testing::ValuesIn(kCases), case_name);

// AVX-512 without AVX-512 BF16 (x86-64-v4: Skylake-X, Ice Lake): gemm bf16 takes its fp32 path
// at 512 bits. Only where this CPU can run AVX-512 code.
TEST(Avx2Only, GemmBf16OnAvx512WithoutBf16) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 here";
  const auto r = test::run_command(std::string("KFORGE_CPU_MARCH=x86-64-v4 '") + KFORGE_CLI_PATH +
                                   "' verify gemm --size M=67,N=45,K=401 --dtype bf16 --backend cpu --quick --json");
  const auto j = test::parse_or_fail(r);
  EXPECT_EQ(j.value("disposition", ""), "passed") << j.dump();
  EXPECT_NE(j.value("device", "").find("-march=x86-64-v4"), std::string::npos) << j.dump();
}

// The long form: every other library problem's cpu kernel, at its default sizes.
TEST(Avx2Only, EveryOtherLibraryCpuKernelWhenAsked) {
  const char* all = std::getenv("KFORGE_AVX2_ALL");
  if (!can_run_x86_64_v3()) GTEST_SKIP() << "this CPU cannot run x86-64-v3 code";
  if (!all || std::string(all) != "1") GTEST_SKIP() << "set KFORGE_AVX2_ALL=1 to verify every library cpu kernel";
  for (const auto& p : problems()) {
    if (kDenseProblems.count(p->name())) continue;
    const auto kernels = library_kernels(*p);
    if (std::none_of(kernels.begin(), kernels.end(), [](const KernelSpec& k) { return k.lang == Lang::cpp; }))
      continue;
    const auto r = verify_for_avx2(p->name());
    EXPECT_EQ(r.exit_code, 0) << p->name() << ": " << r.out << r.err;
  }
}

}  // namespace
}  // namespace kforge
