#pragma once
// Several jobs sharing one device: each submits its kernels in order, with host time between
// them; the device runs one kernel at a time, to completion. The priority scheduler runs a
// higher-priority job's kernel first and fills the gaps while that job is on the host with
// lower-priority kernels that fit, by what it has learnt of each kernel's duration and each
// job's gaps, never starting one that it predicts would delay a higher-priority job's next
// kernel by more than `max_delay_s`. One engine runs it against a virtual clock (the simulator,
// exact) or the wall clock with a real device (docs/commands/schedule.md).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::schedule {

struct Launch {
  std::string kernel;     // its identity: the problem and sizes ("gemm M=256,N=256,K=256")
  double host_gap_s = 0;  // the job's host time before it submits this launch
  double duration_s = 0;  // the simulator's truth; a real device measures it
};

struct Job {
  std::string name;
  int priority = 0;       // higher goes first
  double start_s = 0;
  std::vector<Launch> launches;
};

struct Policy {
  bool managed = true;     // false: one in-order queue (the order of submission), as a stream is
  double max_delay_s = 0;  // the most a lower-priority kernel may delay a higher one's, by prediction
  double safety = 1.25;    // predicted durations are stretched by this before they are fitted
};

// What the scheduler has learnt from the run so far: each kernel's longest duration, and for
// each job the shortest host gap it took after each kernel.
class Estimates {
 public:
  void observe_duration(const std::string& kernel, double s);
  void observe_gap(const std::string& job, const std::string& after_kernel, double s);
  [[nodiscard]] std::optional<double> duration(const std::string& kernel) const;
  [[nodiscard]] std::optional<double> gap(const std::string& job, const std::string& after_kernel) const;

 private:
  std::map<std::string, double> duration_;
  std::map<std::pair<std::string, std::string>, double> gap_;
};

// One job as the scheduler sees it at a decision.
struct JobView {
  int priority = 0;
  bool done = false;
  std::optional<std::string> waiting;  // the submitted launch's kernel, if one waits for the device
  double submitted_s = 0;              // when it was submitted
  // On the host (nothing waiting, not done): when its next launch is predicted to arrive; empty
  // when the scheduler cannot predict it yet.
  std::optional<double> next_submit_s;
};

// The job whose waiting launch the device runs now, or empty: stay idle until the next event.
[[nodiscard]] std::optional<std::size_t> choose(const std::vector<JobView>& jobs, double now, const Policy& p,
                                                const Estimates& e);

struct LaunchRecord {
  std::size_t job = 0, index = 0;  // jobs[job].launches[index]
  double submitted_s = 0, start_s = 0, end_s = 0;
};

struct Result {
  std::vector<LaunchRecord> launches;  // in the order the device ran them
  std::vector<double> completion_s;    // per job: its last launch's end, from its start
  std::vector<double> alone_s;         // per job: the same with the device to itself
  double busy_s = 0, makespan_s = 0;
  double decision_s = 0;               // wall time spent in choose(), all decisions
  int decisions = 0;
  [[nodiscard]] nlohmann::json to_json(const std::vector<Job>& jobs) const;
};

// The device and the clock the engine runs against.
struct Device {
  std::function<double()> now;                          // seconds
  std::function<void(double)> wait_until;               // idle until then
  std::function<double(const Job&, const Launch&)> run;  // runs it to completion; its seconds
};

// Runs every job to its end, starting from what `prior` knows (a kernel never measured is never
// fitted into a gap). `alone_s` is filled from the launches' own durations as run.
[[nodiscard]] Result run_jobs(const std::vector<Job>& jobs, const Policy& p, Device& device,
                              const Estimates& prior = {});
// The same against a virtual clock whose kernels take their `duration_s`: exact. Each kernel's
// duration is known from the start, as a real device's is from its warm-up launch.
[[nodiscard]] Result simulate(const std::vector<Job>& jobs, const Policy& p);

// A jobs file (docs/commands/schedule.md). Throws UsageError naming the field.
[[nodiscard]] std::vector<Job> jobs_from_json(const nlohmann::json& j);

}  // namespace kforge::schedule
