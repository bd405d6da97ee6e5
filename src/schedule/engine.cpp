// The engine (include/kforge/schedule.hpp): jobs submit their launches after their host gaps,
// the idle device asks choose() what to run, and what it learns goes into Estimates. The same
// loop runs on a virtual clock (simulate) and on the wall clock with a real device.
#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "kforge/schedule.hpp"

namespace kforge::schedule {
namespace {

struct JobState {
  std::size_t next = 0;     // the next launch to submit (or the one waiting)
  double submit_at = 0;     // when that launch is (or was) submitted
  bool waiting = false;
  bool finished = false;
  double last_end = 0;
};

double elapsed_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result run_jobs(const std::vector<Job>& jobs, const Policy& p, Device& device, const Estimates& prior) {
  Result out;
  out.completion_s.assign(jobs.size(), 0);
  out.alone_s.assign(jobs.size(), 0);
  std::vector<JobState> st(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    st[j].finished = jobs[j].launches.empty();
    if (!st[j].finished) st[j].submit_at = jobs[j].start_s + jobs[j].launches[0].host_gap_s;
  }
  Estimates est = prior;
  const double t_begin = device.now();
  for (;;) {
    const double now = device.now() - t_begin;
    bool all_done = true;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      JobState& s = st[j];
      if (s.finished) continue;
      all_done = false;
      if (!s.waiting && s.submit_at <= now) {
        s.waiting = true;
        if (s.next > 0) est.observe_gap(jobs[j].name, jobs[j].launches[s.next - 1].kernel, s.submit_at - s.last_end);
      }
    }
    if (all_done) break;

    std::vector<JobView> views(jobs.size());
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const JobState& s = st[j];
      JobView& v = views[j];
      v.priority = jobs[j].priority;
      v.done = s.finished || now < jobs[j].start_s;  // a job not yet begun is not there to protect
      if (v.done) continue;
      if (s.waiting) {
        v.waiting = jobs[j].launches[s.next].kernel;
        v.submitted_s = s.submit_at;
      } else if (s.next > 0) {
        if (const auto g = est.gap(jobs[j].name, jobs[j].launches[s.next - 1].kernel)) v.next_submit_s = s.last_end + *g;
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto pick = choose(views, now, p, est);
    out.decision_s += elapsed_since(t0);
    ++out.decisions;

    if (pick) {
      JobState& s = st[*pick];
      const Launch& l = jobs[*pick].launches[s.next];
      LaunchRecord rec{*pick, s.next, s.submit_at, now, 0};
      const double d = device.run(jobs[*pick], l);
      rec.end_s = device.now() - t_begin;
      est.observe_duration(l.kernel, d);
      out.busy_s += rec.end_s - rec.start_s;
      out.alone_s[*pick] += l.host_gap_s + (rec.end_s - rec.start_s);
      out.launches.push_back(rec);
      s.waiting = false;
      s.last_end = rec.end_s;
      if (++s.next == jobs[*pick].launches.size()) {
        s.finished = true;
        out.completion_s[*pick] = rec.end_s - jobs[*pick].start_s;
      } else {
        s.submit_at = rec.end_s + jobs[*pick].launches[s.next].host_gap_s;
      }
      continue;
    }
    // Idle until the next submission: nothing waiting may run before one changes the picture.
    double next = std::numeric_limits<double>::infinity();
    for (const auto& s : st)
      if (!s.finished && !s.waiting) next = std::min(next, s.submit_at);
    for (const auto& j : jobs)
      if (j.start_s > now) next = std::min(next, j.start_s);
    // With every unfinished job waiting, none is on the host to protect: choose() runs one.
    if (next == std::numeric_limits<double>::infinity()) throw std::logic_error("schedule: idle with nothing to wait for");
    device.wait_until(t_begin + next);
  }
  out.makespan_s = device.now() - t_begin;
  return out;
}

Result simulate(const std::vector<Job>& jobs, const Policy& p) {
  double clock = 0;
  Device virtual_device{[&clock] { return clock; }, [&clock](double t) { clock = std::max(clock, t); },
                        [&clock](const Job&, const Launch& l) {
                          clock += l.duration_s;
                          return l.duration_s;
                        }};
  Estimates measured;
  for (const auto& j : jobs)
    for (const auto& l : j.launches) measured.observe_duration(l.kernel, l.duration_s);
  return run_jobs(jobs, p, virtual_device, measured);
}

}  // namespace kforge::schedule
