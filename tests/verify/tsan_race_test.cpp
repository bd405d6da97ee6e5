// ThreadSanitizer in thorough mode (`kforge eval --tsan`, src/eval/tsan_probe.cpp): the race
// worker names the two racing accesses of tests/verify/wrong/race_split_k.cpp by source line,
// whatever the schedule happened to be, and flags nothing in a correct kernel.
#include <gtest/gtest.h>

#include "eval/tsan_probe.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"
#include "race_worker_util.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

const nlohmann::json* race_check(const nlohmann::json& checks) {
  for (const auto& c : checks)
    if (c.at("name") == "race") return &c;
  return nullptr;
}

TEST(TsanRace, TheRaceWorkerNamesTheTwoAccessesOfSplitK) {
  if (tsan_runtime().empty()) GTEST_SKIP() << "no ThreadSanitizer runtime in this build";
  const std::string src = std::string(KFORGE_TEST_DATA) + "/../verify/wrong/race_split_k.cpp";
  const EvalRequest req = test::race_candidate("cpp", src, {"KS"}, {}, {{"KS", 4}}, {{"M", 24}, {"N", 20}, {"K", 36}});
  EvalResult r = test::passed_verdict(req);
  probe_races(req, {.timeout_s = 120}, test::worker_path(), r);  // sandboxed, as evaluate_isolated runs it
  ASSERT_TRUE(r.verify);
  EXPECT_EQ(r.disposition, Disposition::nondeterministic)
      << (r.verify->checks.empty() ? std::string("no race check") : r.verify->checks.back().detail);
  EXPECT_EQ(r.verify->failed_check, "race");
  // Both accesses named in the candidate's own file: its read-copy of C and its write-back.
  const std::string& e = r.error;
  const auto first = e.find("race_split_k.cpp:");
  ASSERT_NE(first, std::string::npos) << e;
  EXPECT_NE(e.find("race_split_k.cpp:", first + 1), std::string::npos) << e;
  EXPECT_NE(e.find("write of size 4"), std::string::npos) << e;
  std::printf("[ race ] %s\n", e.c_str());
}

// The race worker has no address-space limit (ThreadSanitizer's shadow), but its resident
// memory is watched at the ordinary worker's limit: a kernel touching 3 GiB is stopped at
// 512 MiB, and the check says why it could not run (the verdict it was given stands).
TEST(TsanRace, TheRaceWorkerIsStoppedAtTheResidentMemoryLimit) {
  if (tsan_runtime().empty()) GTEST_SKIP() << "no ThreadSanitizer runtime in this build";
  const std::string src = std::string(KFORGE_TEST_DATA) + "/hostile/raises_own_limit.cpp";
  const EvalRequest req = test::race_candidate("cpp", src, {"ceil_div(M,16)"}, {}, {}, {{"M", 24}, {"N", 20}, {"K", 36}});
  EvalResult r = test::passed_verdict(req);
  probe_races(req, {.timeout_s = 60, .memory_bytes = 512ll << 20}, test::worker_path(), r);
  ASSERT_TRUE(r.verify);
  ASSERT_FALSE(r.verify->checks.empty());
  const auto& c = r.verify->checks.back();
  EXPECT_EQ(c.name, "race");
  EXPECT_NE(c.detail.find("MiB of resident memory, past its limit of 512 MiB"), std::string::npos) << c.detail;
  EXPECT_EQ(r.disposition, Disposition::passed);  // the verdict it was given stands
}

TEST(TsanRace, ACorrectKernelIsNotFlaggedEndToEnd) {
  if (tsan_runtime().empty()) GTEST_SKIP() << "no ThreadSanitizer runtime in this build";
  // Three blocks of 16 rows and a tail block: every pair of blocks runs concurrently.
  const auto r = test::kforge_cli("eval --problem gemm --lang cpp --source " + test::data_path("naive_gemm.cpp") +
                                  " --grid 'ceil_div(M,16)' --size M=57,N=23,K=19 --no-index-width --tsan --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = test::parse_or_fail(r);
  EXPECT_EQ(j.at("disposition"), "passed");
  const auto* c = race_check(j.at("verify").at("checks"));
  ASSERT_NE(c, nullptr) << j.at("verify").at("checks").dump();
  EXPECT_TRUE(c->at("passed").get<bool>());
  EXPECT_NE(c->at("detail").get<std::string>().find("no data race"), std::string::npos) << c->dump();
}

// `kforge verify --tsan`: a library kernel (run in this process) goes to the race worker after
// its pass, on cpu only: the multi-block library gemm at odd sizes is not flagged.
TEST(TsanRace, VerifyOfALibraryKernelRunsTheRaceWorker) {
  if (tsan_runtime().empty()) GTEST_SKIP() << "no ThreadSanitizer runtime in this build";
  const auto r = test::kforge_cli("verify gemm --backend cpu --size M=101,N=150,K=45 --params MC=24,NC=64 --tsan --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = test::parse_or_fail(r);
  if (j.is_array()) j = j.at(0);
  EXPECT_EQ(j.at("disposition"), "passed");
  const auto* c = race_check(j.at("verify").at("checks"));
  ASSERT_NE(c, nullptr) << j.at("verify").at("checks").dump();
  EXPECT_TRUE(c->at("passed").get<bool>());
  EXPECT_NE(c->at("detail").get<std::string>().find("no data race"), std::string::npos) << c->dump();
  const auto quick = test::kforge_cli("verify gemm --backend cpu --quick --tsan");
  EXPECT_EQ(quick.exit_code, 2);
}

TEST(TsanRace, TsanIsRefusedWhereItCannotRun) {
  const std::string base = "eval --problem gemm --lang cpp --source " + test::data_path("naive_gemm.cpp") +
                           " --grid 'ceil_div(M,16)' --size M=16,N=16,K=16 --tsan";
  const auto quick = test::kforge_cli(base + " --quick");
  EXPECT_EQ(quick.exit_code, 2);
  EXPECT_NE(quick.err.find("--tsan is a thorough check"), std::string::npos) << quick.err;
}

}  // namespace
}  // namespace kforge
