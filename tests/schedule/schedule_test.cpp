// The priority scheduler (include/kforge/schedule.hpp): on the virtual clock, random jobs run
// every launch once, in each job's order, one at a time, never before it is submitted; the
// scheduler keeps a higher-priority job's waits within the stated bound once it has learnt the
// durations and gaps, fills its gaps where kernels fit, and beats the unmanaged queue for it;
// jobs files are checked; and a real run on the cpu device runs every launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "kforge/error.hpp"
#include "kforge/schedule.hpp"
#include "test_util.hpp"

namespace kforge::schedule {
namespace {

constexpr double kEps = 1e-12;

// Jobs with random durations and gaps, each pattern repeated so that there is something to learn.
std::vector<Job> random_jobs(std::mt19937_64& rng, int levels) {
  std::uniform_real_distribution<double> dur(0.1e-3, 3e-3), gap(0, 6e-3);
  std::vector<Job> jobs;
  for (int j = 0; j < levels + 1; ++j) {
    Job job{"job" + std::to_string(j), j % levels, 0, {}};
    const int kinds = 1 + static_cast<int>(rng() % 3), repeat = 3 + static_cast<int>(rng() % 6);
    std::vector<Launch> once;
    for (int k = 0; k < kinds; ++k)
      once.push_back({job.name + ".k" + std::to_string(k), j % levels == 0 ? 0.0 : gap(rng), dur(rng)});
    for (int r = 0; r < repeat; ++r) job.launches.insert(job.launches.end(), once.begin(), once.end());
    jobs.push_back(job);
  }
  return jobs;
}

// Every launch once, in its job's order, after its submission, none overlapping another; each
// submission its gap after the job's previous launch ended (or after the job's start).
void expect_well_formed(const std::vector<Job>& jobs, const Result& r) {
  std::size_t total = 0;
  for (const auto& j : jobs) total += j.launches.size();
  ASSERT_EQ(r.launches.size(), total);
  std::vector<std::size_t> next(jobs.size(), 0);
  std::vector<double> last_end(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) last_end[j] = jobs[j].start_s;
  double device_free = 0;
  for (const auto& l : r.launches) {
    EXPECT_EQ(l.index, next[l.job]++) << "job " << l.job << " out of order";
    const Launch& spec = jobs[l.job].launches[l.index];
    EXPECT_NEAR(l.submitted_s, last_end[l.job] + spec.host_gap_s, 1e-9);
    EXPECT_GE(l.start_s + kEps, l.submitted_s);
    EXPECT_GE(l.start_s + kEps, device_free) << "two launches overlap";
    EXPECT_NEAR(l.end_s - l.start_s, spec.duration_s, 1e-9);
    device_free = l.end_s;
    last_end[l.job] = l.end_s;
  }
}

TEST(Schedule, RandomJobsRunWellFormedUnderBothPolicies) {
  std::mt19937_64 rng(20261204);
  for (int trial = 0; trial < 40; ++trial) {
    const auto jobs = random_jobs(rng, 2 + trial % 2);
    for (const bool managed : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "trial " << trial << (managed ? " managed" : " unmanaged"));
      const Result r = simulate(jobs, {managed, 0.5e-3, 1.25});
      expect_well_formed(jobs, r);
      for (std::size_t j = 0; j < jobs.size(); ++j) EXPECT_GE(r.completion_s[j] + kEps, r.alone_s[j]);
    }
  }
}

// Two jobs, the higher one with constant gaps: once its gap after each kernel has been seen, a
// lower-priority kernel delays its next one by at most max_delay; before, none starts in its gaps.
TEST(Schedule, TheHigherJobWaitsAtMostTheBoundOnceLearnt) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dur(0.1e-3, 2.5e-3), gap(0.5e-3, 5e-3), delay(0, 1e-3);
  for (int trial = 0; trial < 60; ++trial) {
    const double max_delay = trial % 3 == 0 ? 0.0 : delay(rng);
    Job high{"high", 5, 0, {}}, low{"low", 1, 0, {}};
    std::vector<Launch> pattern;
    for (int k = 0; k < 1 + trial % 3; ++k) pattern.push_back({"h" + std::to_string(k), gap(rng), dur(rng)});
    for (int r = 0; r < 6; ++r) high.launches.insert(high.launches.end(), pattern.begin(), pattern.end());
    const double low_durations[] = {dur(rng), dur(rng), dur(rng)};  // one per kernel identity
    for (int r = 0; r < 40; ++r) low.launches.push_back({"l" + std::to_string(r % 3), 0, low_durations[r % 3]});
    const std::vector<Job> jobs{high, low};
    const Result r = simulate(jobs, {true, max_delay, 1.0 + 0.5 * (trial % 2)});
    expect_well_formed(jobs, r);
    std::size_t seen = 0;
    for (const auto& l : r.launches) {
      if (l.job != 0) continue;
      // The first round of the pattern teaches the gaps; the first launch has no gap before it.
      if (++seen > pattern.size()) EXPECT_LE(l.start_s - l.submitted_s, max_delay + 1e-9) << "launch " << l.index;
    }
  }
}

TEST(Schedule, FillsTheGapsAndBeatsTheQueueForTheHigherJob) {
  const auto jobs = jobs_from_json(nlohmann::json::parse(test::data_file("../../examples/schedule/inference_and_training.json")));
  const Result queue = simulate(jobs, {false, 0, 1.25}), managed = simulate(jobs, {true, 0, 1.25});
  expect_well_formed(jobs, queue);
  expect_well_formed(jobs, managed);
  const auto q = queue.to_json(jobs), m = managed.to_json(jobs);
  EXPECT_LT(m["jobs"][0]["completion_s"].get<double>(), q["jobs"][0]["completion_s"].get<double>());
  EXPECT_GT(m["jobs"][0]["gaps_filled"].get<double>(), 0.3) << m.dump(2);
  EXPECT_DOUBLE_EQ(m["jobs"][0]["slowdown"].get<double>(), 1.0);  // exact durations, max delay 0
  // The lower job is not starved until the higher one ends: it ends before the two jobs' work
  // run one after the other would.
  EXPECT_LT(m["jobs"][1]["completion_s"].get<double>(),
            m["jobs"][0]["alone_s"].get<double>() + m["jobs"][1]["alone_s"].get<double>());
}

TEST(Schedule, JobsFilesAreCheckedWithTheFieldNamed) {
  const auto refused = [](const std::string& text, const std::string& says) {
    try {
      (void)jobs_from_json(nlohmann::json::parse(text));
      ADD_FAILURE() << "accepted: " << text;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(R"({"jobs": []})", "non-empty \"jobs\"");
  refused(R"({"jobs": [{"launches": [{"kernel": "gemm"}]}]})", "job 1: a job has a \"name\"");
  refused(R"({"jobs": [{"name": "a", "priority": 1.5, "launches": [{"kernel": "gemm"}]}]})", "\"priority\" must be an integer");
  refused(R"({"jobs": [{"name": "a", "repeat": 0, "launches": [{"kernel": "gemm"}]}]})", "\"repeat\" must be");
  refused(R"({"jobs": [{"name": "a", "launches": [{"kernel": "gemm", "gap_ms": -1}]}]})", "launch 1: \"gap_ms\"");
  refused(R"({"jobs": [{"name": "a", "launches": [{"kernel": "x"}]}, {"name": "a", "launches": [{"kernel": "y"}]}]})",
          "taken by another job");
  const auto jobs = jobs_from_json(nlohmann::json::parse(
      R"({"jobs": [{"name": "a", "repeat": 3, "launches": [{"kernel": "gemm", "sizes": "M=8", "gap_ms": 2}]}]})"));
  ASSERT_EQ(jobs[0].launches.size(), 3u);
  EXPECT_EQ(jobs[0].launches[2].kernel, "gemm M=8");
  EXPECT_DOUBLE_EQ(jobs[0].launches[2].host_gap_s, 2e-3);
}

// The real device: the library's cpu kernels, every launch run under both policies.
TEST(Schedule, RealRunOnTheCpuDeviceRunsEveryLaunch) {
  const auto dir = test::scratch_dir("kforge-schedule-tests", "real");
  std::ofstream(dir / "jobs.json") << R"({"jobs": [
    {"name": "latency", "priority": 3, "repeat": 6, "launches": [{"kernel": "gemm", "sizes": "M=37,N=29,K=41", "gap_ms": 1}]},
    {"name": "batch", "repeat": 9, "launches": [{"kernel": "softmax", "sizes": "M=33,N=257"}]}]})";
  const auto r = test::kforge_cli("schedule " + (dir / "jobs.json").string() + " --threads 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = test::parse_or_fail(r);
  ASSERT_EQ(doc["rounds"].size(), 1u);
  for (const char* policy : {"managed", "unmanaged"}) {
    const auto& jobs = doc["rounds"][0][policy]["jobs"];
    EXPECT_EQ(jobs[0]["launches"], 6) << policy;
    EXPECT_EQ(jobs[1]["launches"], 9) << policy;
    EXPECT_GT(jobs[0]["completion_s"].get<double>(), 6 * 1e-3) << policy;  // six gaps of 1 ms at least
  }
  const auto bad = test::kforge_cli("schedule " + (dir / "nothing.json").string());
  EXPECT_EQ(bad.exit_code, 2);
  std::ofstream(dir / "unknown.json") << R"({"jobs": [{"name": "a", "launches": [{"kernel": "no_such_problem"}]}]})";
  EXPECT_EQ(test::kforge_cli("schedule " + (dir / "unknown.json").string()).exit_code, 2);
}

}  // namespace
}  // namespace kforge::schedule
