// The sampling loop: warm-up, then every timed thing in turn until each one's stopping
// criterion holds; and the cold-run helpers (rotating copies of the inputs).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "kforge/measure.hpp"

namespace kforge {
namespace {

std::vector<Timing> measure_all(const std::vector<const std::function<double()>*>& runs,
                                const MeasureOptions& o) {
  for (int i = 0; i < o.warmup; ++i)
    for (const auto* r : runs) (void)(*r)();
  std::vector<std::unique_ptr<StoppingCriterion>> rules;
  for (std::size_t i = 0; i < runs.size(); ++i) rules.push_back(make_criterion(o));
  std::vector<std::vector<double>> samples(runs.size());
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      samples[i].push_back((*runs[i])());
      rules[i]->add(samples[i].back());
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool all_done = true;
    for (auto& r : rules) all_done = r->done(elapsed) && all_done;  // each sees the time
    if (all_done) break;
  }
  std::vector<Timing> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out.push_back(summarize(std::move(samples[i])));
    out.back().noise_target_met = rules[i]->noise_target_met();
    out.back().stop_reason = rules[i]->reason();
  }
  return out;
}

}  // namespace

Timing measure(const std::function<double()>& once, const MeasureOptions& o) {
  return measure_all({&once}, o).front();
}

PairTiming measure_pair(const std::function<double()>& a, const std::function<double()>& b,
                        const MeasureOptions& o) {
  auto t = measure_all({&a, &b}, o);
  return {std::move(t[0]), std::move(t[1])};
}

int cold_copies(double set_bytes, double cache_bytes) {
  if (set_bytes <= 0) return 2;
  const double copies = std::ceil(4.0 * cache_bytes / set_bytes) + 1;
  return static_cast<int>(std::clamp(copies, 2.0, 4096.0));
}

std::function<void()> rotation(std::vector<std::function<void()>> fns) {
  auto state = std::make_shared<std::pair<std::vector<std::function<void()>>, std::size_t>>(
      std::move(fns), 0);
  return [state] {
    auto& [f, next] = *state;
    f[next]();
    next = (next + 1) % f.size();
  };
}

}  // namespace kforge
