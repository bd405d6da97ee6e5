#pragma once
// A device's own cumulative energy counter (the cuda backend's: NVML's total energy since the
// driver loaded), and the batch measurement that turns a coarse counter into joules per run.
// Kept apart from kforge/energy.hpp (included by every evaluation) so that it rebuilds little.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace kforge {

class EnergyCounter {
 public:
  virtual ~EnergyCounter() = default;
  // Millijoules since a fixed origin; throws std::runtime_error when the device stops answering.
  [[nodiscard]] virtual std::uint64_t energy_mj() = 0;
  [[nodiscard]] virtual std::string describe() const = 0;  // "NVML total energy, GPU 0 (...)"
};

// What a backend whose device has its own counter implements beside Backend (cuda: NVML). Found
// with dynamic_cast (eval/energy_plan.cpp), so that the widely included backend.hpp is unchanged;
// a backend without it is metered by the host's RAPL where readable.
class DeviceEnergySource {
 public:
  virtual ~DeviceEnergySource() = default;
  // The device's counter; null, with the reason in `why` ("NVML: library not found: ..."), when
  // it cannot be read here: energy then falls back to the labelled model, never to RAPL.
  [[nodiscard]] virtual std::shared_ptr<EnergyCounter> energy_counter(std::string* why) = 0;
};

// How long a batch of runs must last. The counter advances in steps (NVML: every few tens of ms
// on the GPUs we know of, undocumented), so a delta over one short run is mostly quantization.
struct EnergyBatchOptions {
  double min_s = 0.1;        // the window between two counter steps lasts at least this long
  double max_wait_s = 2.0;   // give up (too short to measure) when the counter has not moved by then
  int min_runs = 3;
};

struct BatchEnergy {
  double joules_per_run = 0;
  int runs = 0;           // runs inside the window
  double window_s = 0;    // wall seconds from the first counter step to the last
  std::uint64_t delta_mj = 0;
};

// Runs `run_once` back to back between two steps of the counter: it first waits for a step
// (so the window opens on a fresh reading), runs for at least min_s, then keeps running until the
// counter steps again, reading it after every run. Joules per run = the delta over the runs in
// the window. None, with the reason in `why` ("too short to measure: ..."), when the counter does
// not move within max_wait_s.
[[nodiscard]] std::optional<BatchEnergy> measure_batch_energy(EnergyCounter& counter,
                                                              const std::function<void()>& run_once,
                                                              const EnergyBatchOptions& o,
                                                              std::string* why = nullptr);

}  // namespace kforge
