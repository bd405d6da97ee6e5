// The scheduler's decision (include/kforge/schedule.hpp): which waiting launch the idle device
// runs now, and what it has learnt to decide it.
#include <algorithm>
#include <limits>

#include "kforge/schedule.hpp"

namespace kforge::schedule {

void Estimates::observe_duration(const std::string& kernel, double s) {
  auto [it, fresh] = duration_.try_emplace(kernel, s);
  if (!fresh) it->second = std::max(it->second, s);  // the longest seen: a fit must hold for every run
}

void Estimates::observe_gap(const std::string& job, const std::string& after_kernel, double s) {
  auto [it, fresh] = gap_.try_emplace({job, after_kernel}, s);
  if (!fresh) it->second = std::min(it->second, s);  // the shortest seen: the job may be back that soon
}

std::optional<double> Estimates::duration(const std::string& kernel) const {
  const auto it = duration_.find(kernel);
  return it == duration_.end() ? std::nullopt : std::optional<double>(it->second);
}

std::optional<double> Estimates::gap(const std::string& job, const std::string& after_kernel) const {
  const auto it = gap_.find({job, after_kernel});
  return it == gap_.end() ? std::nullopt : std::optional<double>(it->second);
}

namespace {

// How long `c`'s kernel may run from `now` without delaying a higher-priority job on the host by
// more than the policy allows: +inf when no such job exists, negative when one's return cannot be
// predicted (nothing may start under it then).
double room(const std::vector<JobView>& jobs, const JobView& c, double now, const Policy& p) {
  double limit = std::numeric_limits<double>::infinity();
  for (const auto& h : jobs) {
    if (h.done || h.waiting || h.priority <= c.priority) continue;
    if (!h.next_submit_s) return -1;
    limit = std::min(limit, *h.next_submit_s + p.max_delay_s - now);
  }
  return limit;
}

}  // namespace

std::optional<std::size_t> choose(const std::vector<JobView>& jobs, double now, const Policy& p, const Estimates& e) {
  std::optional<std::size_t> best;
  if (!p.managed) {  // one in-order queue: first submitted, first run
    for (std::size_t i = 0; i < jobs.size(); ++i)
      if (!jobs[i].done && jobs[i].waiting && (!best || jobs[i].submitted_s < jobs[*best].submitted_s)) best = i;
    return best;
  }
  // Highest priority first. Within a priority: with no higher job on the host, the first
  // submitted; in a higher job's gap, the longest predicted kernel that fits it (best fit).
  double best_fit = -1;
  int level = std::numeric_limits<int>::min();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobView& c = jobs[i];
    if (c.done || !c.waiting) continue;
    if (best && c.priority < level) continue;
    const double r = room(jobs, c, now, p);
    double fit = 0;
    if (r != std::numeric_limits<double>::infinity()) {
      const auto d = e.duration(*c.waiting);
      if (!d || *d * p.safety > r) continue;  // unknown, or it would overrun the gap
      fit = *d;
    }
    const bool better = !best || c.priority > level || fit > best_fit ||
                        (fit == best_fit && c.submitted_s < jobs[*best].submitted_s);
    if (better) {
      best = i;
      level = c.priority;
      best_fit = fit;
    }
  }
  return best;
}

}  // namespace kforge::schedule
