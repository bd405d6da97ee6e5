// `kforge schedule JOBS.json`: several jobs' kernels on one device, unmanaged (one in-order
// queue) and under the priority scheduler, side by side (docs/commands/schedule.md). With
// --simulate the launches take the durations the file gives, on a virtual clock (exact);
// otherwise the library's kernels run on the backend and the clock is the wall clock.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/schedule.hpp"
#include "kforge/util.hpp"
#include "schedule/backend_device.hpp"

namespace kforge::cli {
namespace {

struct ScheduleOptions {
  std::string jobs, backend = "cpu";
  bool simulate = false, json = false;
  int threads = 0, rounds = 1;
  double max_delay_ms = 0, safety = 1.25;
};

void print_result(const char* label, const schedule::Result& r, const std::vector<schedule::Job>& jobs) {
  const nlohmann::json j = r.to_json(jobs);
  fmt::print("{}: makespan {:.2f} ms, device busy {:.0f}%, {} decisions at {:.2f} us each\n", label, r.makespan_s * 1e3,
             100 * j["device_busy"].get<double>(), r.decisions, 1e6 * j["decision_s_mean"].get<double>());
  fmt::print("  {:<16} {:>8} {:>13} {:>9} {:>9} {:>13} {:>12} {:>12}\n", "job", "priority", "completion ms",
             "alone ms", "slowdown", "mean wait ms", "max wait ms", "gaps filled");
  for (const auto& x : j["jobs"])
    fmt::print("  {:<16} {:>8} {:>13.2f} {:>9.2f} {:>8.2f}x {:>13.3f} {:>12.3f} {:>11.0f}%\n",
               x["name"].get<std::string>(), x["priority"].get<int>(), 1e3 * x["completion_s"].get<double>(),
               1e3 * x["alone_s"].get<double>(), x["slowdown"].get<double>(), 1e3 * x["mean_wait_s"].get<double>(),
               1e3 * x["max_wait_s"].get<double>(), 100 * x["gaps_filled"].get<double>());
}

int run(const ScheduleOptions& o) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_file(o.jobs));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(o.jobs + " is not JSON: " + e.what());
  }
  const auto jobs = schedule::jobs_from_json(doc);
  schedule::Policy managed{true, o.max_delay_ms * 1e-3, o.safety}, unmanaged = managed;
  unmanaged.managed = false;
  nlohmann::json out = {{"jobs_file", o.jobs}, {"max_delay_s", managed.max_delay_s}, {"safety", o.safety},
                        {"rounds", nlohmann::json::array()}};
  std::unique_ptr<Backend> backend;
  std::unique_ptr<schedule::BackendDevice> real;
  if (o.simulate) {
    out["device"] = "simulated (virtual clock, the file's durations)";
  } else {
    backend = make_backend(o.backend, {.threads = o.threads});
    if (!backend->can_run()) throw UsageError("the " + o.backend + " backend cannot run here: " + backend->device());
    real = std::make_unique<schedule::BackendDevice>(*backend, jobs);
    out["device"] = backend->name() + ": " + backend->device();
  }
  for (int round = 0; round < (o.simulate ? 1 : o.rounds); ++round) {
    nlohmann::json r;
    // Alternate which goes first, so that neither always meets the machine in the same state.
    for (const bool m : round % 2 == 0 ? std::vector<bool>{false, true} : std::vector<bool>{true, false}) {
      schedule::Result res;
      if (o.simulate) {
        res = schedule::simulate(jobs, m ? managed : unmanaged);
      } else {
        schedule::Device d = real->device();
        res = schedule::run_jobs(jobs, m ? managed : unmanaged, d, real->measured());
      }
      if (!o.json) print_result(m ? "priority scheduler" : "unmanaged (one in-order queue)", res, jobs);
      r[m ? "managed" : "unmanaged"] = res.to_json(jobs);
    }
    out["rounds"].push_back(r);
  }
  if (o.json) fmt::print("{}\n", out.dump(2));
  return 0;
}

}  // namespace

void add_schedule(CLI::App& app, int& code) {
  auto o = std::make_shared<ScheduleOptions>();
  auto* cmd = app.add_subcommand("schedule", "several jobs' kernels on one device: unmanaged and under the priority "
                                             "scheduler, side by side");
  cmd->add_option("jobs", o->jobs, "the jobs file (JSON, docs/commands/schedule.md)")->required();
  cmd->add_flag("--simulate", o->simulate, "run on a virtual clock with the file's durations (exact)");
  cmd->add_option("--backend,-b", o->backend, "the device for a real run (cpu or opencl)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "cpu backend threads (0: all cores)")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "real runs of each policy, alternating which goes first")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-delay-ms", o->max_delay_ms,
                  "how long a lower-priority kernel may delay a higher-priority job's next kernel, by prediction")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--safety", o->safety, "predicted durations are stretched by this before they are fitted in a gap")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print one JSON document");
  cmd->callback([o, &code] { code = run(*o); });
}

}  // namespace kforge::cli
