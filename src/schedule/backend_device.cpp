// A real device for the schedule engine: each launch's kernel is the library's kernel of its
// problem for the backend, at its sizes and default parameters, compiled and given inputs once
// (before the clock starts), then launched on demand; the clock is the wall clock.
#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include "eval/runner.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "schedule/backend_device.hpp"

namespace kforge::schedule {

struct BackendDevice::Prepared {
  std::shared_ptr<Problem> problem;
  std::shared_ptr<Module> module;
  std::unique_ptr<KernelRunner> runner;
};

BackendDevice::BackendDevice(Backend& backend, const std::vector<Job>& jobs) : backend_(backend) {
  for (const auto& job : jobs)
    for (const auto& l : job.launches) {
      if (prepared_.count(l.kernel)) continue;
      const auto space = l.kernel.find(' ');
      const std::string name = l.kernel.substr(0, space);
      Prepared p;
      p.problem = find_problem(name);
      const Sizes sizes =
          p.problem->resolve_sizes(space == std::string::npos ? Sizes{} : parse_assignments(l.kernel.substr(space + 1)));
      const KernelSpec k = library_kernel(*p.problem, backend.lang(), sizes);
      const ParamValues params = k.resolve({});
      if (auto why = k.check(params, sizes)) throw UsageError("job " + job.name + ": " + l.kernel + ": " + *why);
      p.module = backend.compile(k.source, k.entry, defines_for(params, DType::fp32), k.source_path);
      p.runner = std::make_unique<KernelRunner>(backend, *p.module, *p.problem, k.geometry(params, sizes));
      p.runner->load(p.problem->make_instance(sizes, DType::fp32, Distribution::normal, 1, 1), false);
      p.runner->launch();  // warm: the first launch of a module pays for its loading
      for (int i = 0; i < 3; ++i) measured_.observe_duration(l.kernel, p.runner->launch());
      prepared_.emplace(l.kernel, std::move(p));
    }
}

BackendDevice::~BackendDevice() = default;

Device BackendDevice::device() {
  using clock = std::chrono::steady_clock;
  const auto origin = clock::now();
  return {[origin] { return std::chrono::duration<double>(clock::now() - origin).count(); },
          [origin](double t) { std::this_thread::sleep_until(origin + std::chrono::duration<double>(t)); },
          [this](const Job&, const Launch& l) { return prepared_.at(l.kernel).runner->launch(); }};
}

}  // namespace kforge::schedule
