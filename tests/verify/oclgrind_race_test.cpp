// The OpenCL race worker (`kforge eval --tsan` on an OpenCL source, src/eval/oclgrind_probe.cpp):
// Oclgrind's simulated device names the racing accesses of the corpus kernels that PoCL's
// schedule hides (a tile read before its barrier) or shows only by chance (split-K across
// work-groups), reports a read outside a buffer as `oob_read`, and flags nothing in a correct
// kernel. Each test skips where Oclgrind is not installed (CI installs it: tools/install-deps).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "eval/oclgrind_probe.hpp"
#include "eval/tsan_probe.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"
#include "race_worker_util.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

std::string corpus(const std::string& file) { return std::string(KFORGE_TEST_DATA) + "/../verify/wrong/" + file; }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

#define SKIP_WITHOUT_OCLGRIND() \
  if (oclgrind_runtime().empty()) GTEST_SKIP() << "Oclgrind is not installed (Debian: oclgrind)"

// PoCL adds the missing barrier itself, so every ordinary check passes this kernel; Oclgrind
// names the tile's store and the inner loop's load, two work-items of one work-group.
TEST(OclgrindRace, TheRaceWorkerNamesTheMissingBarrierOfTheTiledKernel) {
  SKIP_WITHOUT_OCLGRIND();
  const EvalRequest req = test::race_candidate("opencl", corpus("tiled_no_load_barrier.cl"), {"ceil_div(N,16)", "ceil_div(M,16)"},
                                    {"16", "16"}, {}, {{"M", 40}, {"N", 24}, {"K", 37}});
  EvalResult r = test::passed_verdict(req);
  probe_races(req, {.timeout_s = 120}, test::worker_path(), r);  // sandboxed, as evaluate_isolated runs it
  ASSERT_TRUE(r.verify);
  EXPECT_EQ(r.disposition, Disposition::nondeterministic) << r.verify->checks.back().detail;
  EXPECT_EQ(r.verify->failed_check, "race");
  const std::string& e = r.error;
  EXPECT_EQ(count(e, "tiled_no_load_barrier.cl:"), 2u) << e;
  EXPECT_NE(e.find("local memory"), std::string::npos) << e;
  EXPECT_NE(e.find("work-items of one work-group"), std::string::npos) << e;
  EXPECT_NE(e.find("load at"), std::string::npos) << e;
  EXPECT_NE(e.find("store at"), std::string::npos) << e;
  std::printf("[ race ] %s\n", e.c_str());
}

// Split-K: work-groups of different K-slices read and write the same C, whatever the schedule.
// Requested large, run small: the race worker shrinks the instance for the interpreter.
TEST(OclgrindRace, TheRaceWorkerNamesTheSplitKRaceBetweenWorkGroups) {
  SKIP_WITHOUT_OCLGRIND();
  const EvalRequest req =
      test::race_candidate("opencl", corpus("race_split_k.cl"), {"ceil_div(N,128)", "ceil_div(M,128)", "KS"}, {"16", "16", "1"},
                {{"KS", 4}}, {{"M", 256}, {"N", 200}, {"K", 1024}});
  EXPECT_LE(oclgrind_sizes(req, *find_problem("gemm")).at("K"), 64);
  EvalResult r = test::passed_verdict(req);
  probe_races(req, {.timeout_s = 120}, test::worker_path(), r);
  ASSERT_TRUE(r.verify);
  EXPECT_EQ(r.disposition, Disposition::nondeterministic) << r.verify->checks.back().detail;
  EXPECT_EQ(r.verify->failed_check, "race");
  EXPECT_EQ(count(r.error, "race_split_k.cl:"), 2u) << r.error;
  EXPECT_NE(r.error.find("global memory between two work-groups"), std::string::npos) << r.error;
  std::printf("[ race ] %s\n", r.error.c_str());
}

// A read far outside A (multiplied by zero, so the result stays right) is an out-of-bounds read
// to Oclgrind, whose buffers end where the kernel's do.
TEST(OclgrindRace, AReadOutsideABufferIsAnOutOfBoundsRead) {
  SKIP_WITHOUT_OCLGRIND();
  const auto dir = test::scratch_dir("kforge-oclgrind-tests", "oob");
  const auto src = dir / "reads_past_a.cl";
  std::ofstream(src) << R"(__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  float s = 0.0f * A[M * K + 4096];
  for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
  C[i * N + j] = beta != 0.0f ? alpha * s + beta * C[i * N + j] : alpha * s;
}
)";
  const EvalRequest req =
      test::race_candidate("opencl", src.string(), {"ceil_div(N,16)", "ceil_div(M,16)"}, {"16", "16"}, {}, {{"M", 17}, {"N", 9}, {"K", 5}});
  EvalResult r = test::passed_verdict(req);
  probe_races(req, {.timeout_s = 120}, test::worker_path(), r);
  ASSERT_TRUE(r.verify);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << r.verify->checks.back().detail;
  EXPECT_EQ(r.verify->failed_check, "oob_read");
  bool race_passed = false;  // and no race: one read, no conflicting write
  for (const auto& c : r.verify->checks) race_passed = race_passed || (c.name == "race" && c.passed);
  EXPECT_TRUE(race_passed);
  EXPECT_NE(r.error.find("invalid read of size 4 in global memory"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("reads_past_a.cl:5"), std::string::npos) << r.error;
}

TEST(OclgrindRace, ACorrectKernelPassesEndToEndWithAPassedRaceCheck) {
  SKIP_WITHOUT_OCLGRIND();
  const auto r = test::kforge_cli("eval --problem gemm --lang opencl --source " + std::string(KFORGE_TEST_DATA) + "/../../examples/naive_gemm.cl" +
                                  " --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=57,N=23,K=19 "
                                  "--race-worker --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = test::parse_or_fail(r);
  EXPECT_EQ(j.at("disposition"), "passed");
  bool seen = false;
  for (const auto& c : j.at("verify").at("checks"))
    if (c.at("name") == "race") {
      seen = true;
      EXPECT_TRUE(c.at("passed").get<bool>()) << c.dump();
      EXPECT_NE(c.at("detail").get<std::string>().find("Oclgrind saw no data race"), std::string::npos) << c.dump();
    }
  EXPECT_TRUE(seen) << j.at("verify").at("checks").dump();
}

// Without Oclgrind the check says it was skipped: never a race invented, never a verdict changed.
TEST(OclgrindRace, WithoutOclgrindTheCheckReportsItselfSkipped) {
  const EvalRequest req = test::race_candidate("opencl", corpus("tiled_no_load_barrier.cl"), {"ceil_div(N,16)", "ceil_div(M,16)"},
                                    {"16", "16"}, {}, {{"M", 16}, {"N", 16}, {"K", 16}});
  ::setenv("KFORGE_OCLGRIND_RUNTIME", "/nonexistent/liboclgrind-rt.so", 1);
  EvalResult r = test::passed_verdict(req);
  probe_races(req, {.timeout_s = 60}, test::worker_path(), r);
  ::unsetenv("KFORGE_OCLGRIND_RUNTIME");
  ASSERT_TRUE(r.verify);
  ASSERT_FALSE(r.verify->checks.empty());
  EXPECT_EQ(r.verify->checks.back().name, "race");
  EXPECT_TRUE(r.verify->checks.back().passed);
  EXPECT_NE(r.verify->checks.back().detail.find("Oclgrind skipped"), std::string::npos) << r.verify->checks.back().detail;
  EXPECT_EQ(r.disposition, Disposition::passed);
}

}  // namespace
}  // namespace kforge
