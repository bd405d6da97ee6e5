// Jobs files and results as JSON (docs/commands/schedule.md).
#include <algorithm>

#include "kforge/error.hpp"
#include "kforge/schedule.hpp"

namespace kforge::schedule {
namespace {

double number_at(const nlohmann::json& o, const char* key, double fallback, const std::string& where) {
  if (!o.contains(key)) return fallback;
  if (!o.at(key).is_number() || o.at(key).get<double>() < 0)
    throw UsageError(where + ": \"" + key + "\" must be a number >= 0");
  return o.at(key).get<double>();
}

Launch launch_from_json(const nlohmann::json& l, const std::string& where) {
  if (!l.is_object() || !l.contains("kernel") || !l.at("kernel").is_string())
    throw UsageError(where + ": a launch is an object with \"kernel\" (a problem name) and optional \"sizes\", "
                             "\"gap_ms\", \"duration_ms\"");
  Launch out;
  out.kernel = l.at("kernel").get<std::string>();
  if (l.contains("sizes")) {
    if (!l.at("sizes").is_string()) throw UsageError(where + ": \"sizes\" must be a string such as \"M=64,N=64\"");
    out.kernel += " " + l.at("sizes").get<std::string>();
  }
  out.host_gap_s = number_at(l, "gap_ms", 0, where) * 1e-3;
  out.duration_s = number_at(l, "duration_ms", 0, where) * 1e-3;
  return out;
}

}  // namespace

std::vector<Job> jobs_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("jobs") || !j.at("jobs").is_array() || j.at("jobs").empty())
    throw UsageError("a jobs file is an object with a non-empty \"jobs\" array (docs/commands/schedule.md)");
  std::vector<Job> jobs;
  for (const auto& o : j.at("jobs")) {
    const std::string where = "job " + std::to_string(jobs.size() + 1);
    if (!o.is_object() || !o.contains("name") || !o.at("name").is_string() || !o.contains("launches") ||
        !o.at("launches").is_array() || o.at("launches").empty())
      throw UsageError(where + ": a job has a \"name\" and a non-empty \"launches\" array");
    Job job;
    job.name = o.at("name").get<std::string>();
    for (const auto& other : jobs)
      if (other.name == job.name) throw UsageError(where + ": the name '" + job.name + "' is taken by another job");
    if (o.contains("priority") && !o.at("priority").is_number_integer())
      throw UsageError(where + " (" + job.name + "): \"priority\" must be an integer (higher goes first)");
    job.priority = o.value("priority", 0);
    job.start_s = number_at(o, "start_ms", 0, where) * 1e-3;
    const double repeat = number_at(o, "repeat", 1, where);
    if (repeat < 1 || repeat != static_cast<int>(repeat))
      throw UsageError(where + " (" + job.name + "): \"repeat\" must be an integer >= 1");
    std::vector<Launch> once;
    for (const auto& l : o.at("launches"))
      once.push_back(launch_from_json(l, where + " (" + job.name + "), launch " + std::to_string(once.size() + 1)));
    for (int r = 0; r < static_cast<int>(repeat); ++r) job.launches.insert(job.launches.end(), once.begin(), once.end());
    jobs.push_back(std::move(job));
  }
  return jobs;
}

nlohmann::json Result::to_json(const std::vector<Job>& jobs) const {
  nlohmann::json js = nlohmann::json::array();
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    double wait = 0, max_wait = 0, gap_s = 0, filled_s = 0;
    int n = 0;
    double host_from = -1;  // the job's gaps: from its launch's end to its next submission
    for (const auto& r : launches) {
      if (r.job != j) continue;
      wait += r.start_s - r.submitted_s;
      max_wait = std::max(max_wait, r.start_s - r.submitted_s);
      ++n;
      if (host_from >= 0) {
        gap_s += r.submitted_s - host_from;
        for (const auto& o : launches)  // lower-priority kernels run inside that gap
          if (jobs[o.job].priority < jobs[j].priority)
            filled_s += std::max(0.0, std::min(o.end_s, r.submitted_s) - std::max(o.start_s, host_from));
      }
      host_from = r.end_s;
    }
    js.push_back({{"name", jobs[j].name},
                  {"priority", jobs[j].priority},
                  {"launches", n},
                  {"completion_s", completion_s[j]},
                  {"alone_s", alone_s[j]},
                  {"slowdown", alone_s[j] > 0 ? completion_s[j] / alone_s[j] : 0.0},
                  {"mean_wait_s", n ? wait / n : 0.0},
                  {"max_wait_s", max_wait},
                  {"host_gaps_s", gap_s},
                  {"gaps_filled", gap_s > 0 ? filled_s / gap_s : 0.0}});
  }
  return {{"jobs", js},
          {"makespan_s", makespan_s},
          {"device_busy", makespan_s > 0 ? busy_s / makespan_s : 0.0},
          {"decisions", decisions},
          {"decision_s_mean", decisions ? decision_s / decisions : 0.0}};
}

}  // namespace kforge::schedule
