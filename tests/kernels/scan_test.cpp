// The scan family (kernels/scan/) passes kforge's thorough verification on cpu and opencl at odd
// shapes: time 1, primes, chunk and tile +-1, batch 1, and parameters that make the cpu kernel
// chain several chunks per sequence (with each vector width, streamed and plain stores) and the
// opencl kernel walk several tiles. Bad sizes exit 2
// naming the size. OpenCL cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include <string>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

const char* const kProblems[] = {"scan.linear", "scan.linear_rev", "scan.discounted_return",
                                 "scan.gae", "scan.td_lambda", "scan.vtrace",
                                 "scan.retrace", "scan.tree_backup", "scan.nstep"};

struct Case {
  std::int64_t batch, time;
  ParamValues params;
};

void expect_passes(Backend& backend, const char* name, const Case& c) {
  const EvalResult r = evaluate(
      test::library_request(name, backend.name(), {{"batch", c.batch}, {"time", c.time}}, DType::fp32, c.params),
      backend);
  std::string params;
  for (const auto& [k, v] : r.params) params += " " + k + "=" + std::to_string(v);
  EXPECT_TRUE(r.passed()) << name << " on " << backend.name() << " batch=" << c.batch
                          << " time=" << c.time << params << ": "
                          << disposition_name(r.disposition) << ": " << r.error << "\n"
                          << r.compile_log;
}

TEST(ScanCpu, EveryProblemPassesAtOddShapes) {
  auto backend = make_backend("cpu");
  const Case cases[] = {
      {1, 1, {}},
      {7, 301, {}},  // one chunk per sequence, one pass; one block of all 7 sequences (LANES 32)
      // 5 blocks of 8 sequences, the last of 5 (reverse scans walk them last to first);
      // vector-aligned sequences (48 steps) with streamed outputs; prefetches past both ends
      {37, 48, {{"LANES", 8}, {"PF", 256}, {"STREAM_MB", 0}}},
      // 5 chunks of 64 chained per pair of sequences, 8-wide vectors (the defaults: 16), streamed
      // outputs: chunks with unaligned heads and partial tails
      {5, 257, {{"CHUNK", 64}, {"LANES", 2}, {"PAR", 16}, {"VEC", 8}, {"STREAM_MB", 0}}},
      {1, 5000, {}},  // batch 1, one block (PAR 1); the last vector ends the sequence
      {3, 67, {{"CHUNK", 8}, {"PAR", 64}, {"VEC", 4}}},  // 9 chunks of 8 steps: 2 vectors each
  };
  for (const char* p : kProblems)
    for (const Case& c : cases) {
      Case use = c;
      if (std::string(p) == "scan.nstep") use.params = {};  // its only parameter is CHUNK
      expect_passes(*backend, p, use);
    }
}

TEST(ScanCpu, NStepPassesAtOddLookaheadsAndChunks) {
  auto backend = make_backend("cpu");
  const std::int64_t lookaheads[] = {1, 3, 7, 300};  // 300 > time: every window is cut at the end
  for (const std::int64_t n : lookaheads) {
    const auto problem = find_problem("scan.nstep");
    EvalRequest req;
    req.problem = "scan.nstep";
    req.kernel = library_kernel(*problem, Lang::cpp);
    req.sizes = problem->resolve_sizes({{"batch", 3}, {"time", 257}, {"n", n}});
    req.params = {{"CHUNK", 64}};
    // As the CLI verifies library kernels: without the index_width run (scan declares one; it
    // writes 2^31 elements, seconds to minutes: tests/verify/index_width_scan_test.cpp runs it).
    req.verify.index_width = false;
    const EvalResult r = evaluate(req, *backend);
    EXPECT_TRUE(r.passed()) << "n=" << n << ": " << r.error;
  }
  // Blocks of 2 and 4 sequences, the last of 1; streamed outputs where a sequence is vector-aligned
  // (time 64), plain ones where it is not (time 67); 8-wide vectors and prefetches.
  expect_passes(*backend, "scan.nstep", {5, 64, {{"LANES", 2}, {"STREAM_MB", 0}, {"VEC", 8}}});
  expect_passes(*backend, "scan.nstep", {5, 67, {{"LANES", 4}, {"CHUNK", 64}, {"STREAM_MB", 0}, {"PF", 512}}});
}

TEST(ScanOpenCl, EveryProblemPassesAtOddShapes) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  // Default parameters (one program for every problem: PoCL compiles each kernel once).
  const Case cases[] = {
      {1, 1, {}},
      {3, 257, {}},  // one tile (256) + 1: a tail of one step in the first work-item
  };
  for (const char* p : kProblems)
    for (const Case& c : cases) expect_passes(*backend, p, c);
}

TEST(ScanOpenCl, SmallTilesPass) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  // Several tiles of 8 and a tail of 5: every round of the work-group scan, item tails.
  expect_passes(*backend, "scan.gae", {2, 37, {{"WG", 4}, {"ITEMS", 2}}});
  expect_passes(*backend, "scan.linear", {2, 37, {{"WG", 4}, {"ITEMS", 2}}});
}

TEST(ScanCli, BadSizesExitTwoNamingTheSize) {
  const auto r = test::kforge_cli("verify scan.gae --backend cpu --size batch=4,time=0");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("time"), std::string::npos) << r.err;
  const auto r2 = test::kforge_cli("verify scan.linear --backend cpu --size batch=-3");
  EXPECT_EQ(r2.exit_code, 2) << r2.out << r2.err;
  EXPECT_NE(r2.err.find("batch"), std::string::npos) << r2.err;
  const auto r3 = test::kforge_cli("verify scan.nstep --backend cpu --size n=-2");
  EXPECT_EQ(r3.exit_code, 2) << r3.out << r3.err;
  EXPECT_NE(r3.err.find("size n=-2"), std::string::npos) << r3.err;
}

TEST(ScanCpu, InvalidParametersAreRefusedBeforeCompiling) {
  auto backend = make_backend("cpu");
  const auto problem = find_problem("scan.gae");
  EvalRequest req;
  req.problem = "scan.gae";
  req.kernel = library_kernel(*problem, Lang::cpp);
  req.sizes = problem->resolve_sizes({{"batch", 4}, {"time", 64}});
  req.params = {{"CHUNK", 8}, {"VEC", 16}};  // a chunk shorter than one vector
  const EvalResult r = evaluate(req, *backend);
  EXPECT_EQ(r.disposition, Disposition::invalid_config);
  EXPECT_NE(r.error.find("CHUNK >= VEC"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace kforge
