// $KFORGE_CPU_MARCH: the cpu backend compiles kernels for a named instruction set instead of
// -march=native, keeps those modules apart from native's in its compile cache, names the choice
// in its device string, and refuses a name the compiler does not know with a usage error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/cpu_target.hpp"
#include "kforge/error.hpp"
#include "kforge/kernel.hpp"
#include "kforge/problem.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

// Writes whether the compiler targeted AVX-512 (1) or not (0).
constexpr const char* kIsaProbe = R"(
static void body(const kf_ctx&, int* out) {
#if defined(__AVX512F__)
  out[0] = 1;
#else
  out[0] = 0;
#endif
}
KF_KERNEL(isa_probe, body))";

// $KFORGE_CPU_MARCH set for one scope, then put back as it was.
class MarchEnv {
 public:
  explicit MarchEnv(const char* march) {
    if (const char* old = std::getenv("KFORGE_CPU_MARCH")) old_ = old, had_ = true;
    if (march) setenv("KFORGE_CPU_MARCH", march, 1);
    else unsetenv("KFORGE_CPU_MARCH");
  }
  ~MarchEnv() {
    if (had_) setenv("KFORGE_CPU_MARCH", old_.c_str(), 1);
    else unsetenv("KFORGE_CPU_MARCH");
  }

 private:
  std::string old_;
  bool had_ = false;
};

// The probe's answer under `march` (nullptr: the default, native).
int avx512_under(const char* march) {
  MarchEnv env(march);
  auto b = make_backend("cpu", {.threads = 1});
  auto out = b->alloc(sizeof(int));
  auto m = b->compile(kIsaProbe, "isa_probe", {});
  const Arg args[] = {Arg::buf(*out)};
  LaunchGeometry g;
  (void)b->run(*m, g, args);
  int v = -1;
  b->read(*out, &v, sizeof v);
  return v;
}

TEST(CpuMarch, TheNamedInstructionSetIsTheOneCompiledFor) {
  // The same source, compiled native first: a cache keyed without the march would hand the
  // native module back for x86-64-v3.
  const int native = avx512_under(nullptr);
  EXPECT_EQ(native, __builtin_cpu_supports("avx512f") ? 1 : 0);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))  // x86-64-v3 runs here
    EXPECT_EQ(avx512_under("x86-64-v3"), 0);
  if (__builtin_cpu_supports("avx512f")) {  // only run AVX-512 code where it can run
    EXPECT_EQ(avx512_under("x86-64-v4"), 1);
  }
  EXPECT_EQ(avx512_under(nullptr), native);
}

// A spec's "applies" reads CPU_SIMD_FLOATS, the width its kernels' VW = 0 becomes: the compiler's
// answer for the named instruction set, whatever this CPU has (nothing runs).
TEST(CpuMarch, AppliesReadsTheVectorWidthOfTheNamedInstructionSet) {
  const KernelSpec k = KernelSpec::from_json_with_source(
      nlohmann::json::parse(R"({"name": "k", "problem": "p", "source": "k.cpp", "applies": ["D >= 8 && CPU_SIMD_FLOATS == 8"]})"), "");
  {
    MarchEnv env("x86-64-v3");
    EXPECT_EQ(cpu_simd_floats(), 8);
    EXPECT_TRUE(k.applies_to({{"D", 8}}));
    EXPECT_FALSE(k.applies_to({{"D", 7}}));
  }
  {
    MarchEnv env("x86-64-v4");
    EXPECT_EQ(cpu_simd_floats(), 16);
    EXPECT_FALSE(k.applies_to({{"D", 8}}));
  }
  MarchEnv native(nullptr);
  EXPECT_EQ(cpu_simd_floats(), __builtin_cpu_supports("avx512f") ? 16 : 8);
}

// The library's signature picks one path at a time (signature.cpu.large) at D = 8, level 4 where
// the vectors are 8 floats wide, and keeps the batched kernel there with AVX-512's 16.
TEST(CpuMarch, TheSignatureCrossoverFollowsTheVectorWidth) {
  const auto p = find_problem("signature");
  const Sizes s{{"B", 32}, {"L", 128}, {"D", 8}, {"LEVEL", 4}};
  {
    MarchEnv env("x86-64-v3");
    EXPECT_EQ(library_kernel(*p, Lang::cpp, s).name, "signature.cpu.large");
  }
  MarchEnv env("x86-64-v4");
  EXPECT_EQ(library_kernel(*p, Lang::cpp, s).name, "signature.cpu");
}

TEST(CpuMarch, TheDeviceNamesAChosenInstructionSet) {
  {
    MarchEnv env("x86-64-v3");
    EXPECT_NE(make_backend("cpu", {.threads = 2})->device().find("(2 threads, -march=x86-64-v3)"),
              std::string::npos);
  }
  MarchEnv native("native");
  EXPECT_NE(make_backend("cpu", {.threads = 2})->device().find("(2 threads)"), std::string::npos);
}

TEST(CpuMarch, AnUnknownNameIsAUsageErrorNamingTheVariable) {
  for (const char* bad : {"no-such-cpu-x9", "x86-64-v3 -O0"}) {
    MarchEnv env(bad);
    try {
      (void)make_backend("cpu", {.threads = 1});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("KFORGE_CPU_MARCH"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("x86-64-v3"), std::string::npos) << e.what();  // the fix
    }
  }
}

TEST(CpuMarch, TheCommandLineExitsTwoOnAnUnknownName) {
  const auto r = test::run_command("KFORGE_CPU_MARCH=no-such-cpu-x9 '" + std::string(KFORGE_CLI_PATH) +
                                   "' verify gemm --quick --size M=8,N=8,K=8");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("KFORGE_CPU_MARCH='no-such-cpu-x9'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge
