// Crash safety: a writer process recording evaluations in a loop is killed with SIGKILL at
// random moments, several times. Each time the database must open, pass
// `PRAGMA integrity_check`, hold every evaluation the writer reported committed, and the next
// writer must resume after them without recording any evaluation twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <set>
#include <thread>

#include "store_fixtures.hpp"

namespace kforge {
namespace {

using test::fresh_db;
using test::kFingerprint;

constexpr int kConfigs = 100000;  // more than any round gets through

// The i-th configuration: a request whose key no other i shares.
EvalRequest config(int i) {
  static const EvalRequest base = test::gemm_request();
  EvalRequest r = base;
  r.params = {{"MC", 1000 + i}};
  return r;
}

// The writer: resumes, then records one evaluation per transaction and reports each committed
// index through the pipe. Never returns.
[[noreturn]] void writer(const std::filesystem::path& db, int report_fd, int round) {
  try {
    Store s(db);
    const auto run = s.begin_run("crash-test writer round " + std::to_string(round), kFingerprint);
    for (int i = 0; i < kConfigs; ++i) {
      const EvalRequest req = config(i);
      if (s.find(EvalKey::of(req, kFingerprint))) continue;  // resume: stored, so skipped
      EvalResult r = test::fake_result(req, 1e-4 + 1e-9 * i);
      r.timing = summarize(std::vector<double>(200, 1e-4 + 1e-9 * i));  // a row of some size
      s.record(run, StoredEvaluation::from(req, r, kFingerprint));
      if (write(report_fd, &i, sizeof i) != sizeof i) _exit(3);
    }
  } catch (const std::exception& e) {
    fprintf(stderr, "writer: %s\n", e.what());
    _exit(2);
  }
  _exit(0);
}

TEST(StoreCrash, KillNineLosesAtMostTheEvaluationInFlightAndResumeSkipsTheRest) {
  const auto path = fresh_db("crash");
  { Store s(path); }  // the schema exists before the first writer
  std::mt19937 rng(12345);
  std::set<int> reported;  // every index some writer said was committed
  std::size_t stored_before = 0;
  for (int round = 0; round < 6; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      writer(path, fds[1], round);
    }
    close(fds[1]);
    // Let it commit a few, then kill it at a random moment of the next ones.
    const int wait_for = std::uniform_int_distribution<int>(5, 40)(rng);
    std::vector<int> this_round;
    int i = 0;
    while (static_cast<int>(this_round.size()) < wait_for && read(fds[0], &i, sizeof i) == sizeof i)
      this_round.push_back(i);
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended by itself (status " << status << ")";
    while (read(fds[0], &i, sizeof i) == sizeof i) this_round.push_back(i);
    close(fds[0]);
    ASSERT_FALSE(this_round.empty());

    // Resume skipped exactly what was stored: the writer started at the first missing index
    // and never recorded an index twice.
    EXPECT_EQ(this_round.front(), static_cast<int>(stored_before)) << "round " << round;
    for (int k : this_round) EXPECT_TRUE(reported.insert(k).second) << "index " << k << " recorded twice";

    Store s(path);
    EXPECT_EQ(s.integrity_check(), "ok") << "round " << round;
    const auto all = s.evaluations();
    std::set<int> held;
    for (const auto& e : all) held.insert(static_cast<int>(e.params().at("MC").get<int>() - 1000));
    EXPECT_EQ(held.size(), all.size());
    for (int k : reported) EXPECT_TRUE(held.count(k)) << "committed evaluation " << k << " lost in round " << round;
    // Everything reported, and at most one more: committed, killed before it could say so.
    EXPECT_GE(all.size(), stored_before + this_round.size());
    EXPECT_LE(all.size(), stored_before + this_round.size() + 1);
    // The rows are whole: every one reads back as a result.
    for (const auto& e : all) EXPECT_EQ(e.to_result().timing->repetitions(), 200);
    stored_before = all.size();
  }
  EXPECT_GE(stored_before, 6u * 5u);
}

}  // namespace
}  // namespace kforge
