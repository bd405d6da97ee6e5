// Joules per run from a coarse cumulative counter (kforge/energy_counter.hpp). The window opens
// and closes on steps of the counter, each seen right after a run: the run during which the
// opening step fell is left out and the run during which the closing step fell is counted, so
// the two partial runs at the ends cancel on average instead of adding up to a bias.
#include <chrono>

#include <fmt/format.h>

#include "kforge/energy_counter.hpp"

namespace kforge {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

std::optional<BatchEnergy> measure_batch_energy(EnergyCounter& counter, const std::function<void()>& run_once,
                                                const EnergyBatchOptions& o, std::string* why) {
  const auto fail = [&](const std::string& reason) -> std::optional<BatchEnergy> {
    if (why) *why = reason;
    return std::nullopt;
  };
  // Runs until the counter moves from `from`; its new value, or none after max_wait_s.
  int runs = 0;
  const auto run_until_step = [&](std::uint64_t from) -> std::optional<std::uint64_t> {
    const auto t0 = Clock::now();
    while (true) {
      run_once();
      ++runs;
      const std::uint64_t now = counter.energy_mj();
      if (now != from) return now;
      if (since(t0) > o.max_wait_s) return std::nullopt;
    }
  };
  const auto first = run_until_step(counter.energy_mj());
  if (!first)
    return fail(fmt::format("too short to measure: {} did not move in {} s of runs", counter.describe(), o.max_wait_s));
  const auto opened = Clock::now();
  runs = 0;
  while (since(opened) < o.min_s || runs < o.min_runs) {
    run_once();
    ++runs;
  }
  // The closing step: the first one after the reading taken now (the counter moved during the
  // runs above; a step that is not seen right after a run would not say when it happened).
  const auto last = run_until_step(counter.energy_mj());
  if (!last)
    return fail(fmt::format("too short to measure: {} did not move in {} s of runs", counter.describe(), o.max_wait_s));
  if (*last < *first)
    return fail(fmt::format("{} went backwards ({} -> {} mJ): was the driver reloaded?", counter.describe(), *first, *last));
  BatchEnergy b;
  b.runs = runs;
  b.window_s = since(opened);
  b.delta_mj = *last - *first;
  b.joules_per_run = static_cast<double>(b.delta_mj) * 1e-3 / runs;
  return b;
}

}  // namespace kforge
