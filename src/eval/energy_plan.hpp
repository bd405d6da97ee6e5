#pragma once
// Which energy figures an evaluation on a backend reports, decided once per backend so that
// measurements and model values are never mixed: the device's own counter (cuda: NVML), else,
// for a backend without a counter of its own, the host's RAPL; else the labelled model.
#include <memory>
#include <optional>
#include <string>

#include "kforge/backend.hpp"
#include "kforge/energy.hpp"
#include "kforge/energy_counter.hpp"

namespace kforge {

struct EnergyPlan {
  std::shared_ptr<EnergyCounter> device;  // a batch of runs between two counter steps (DeviceEnergySource)
  std::optional<EnergyReader> rapl;       // read around each run
  // Why the model, where the backend should have had a counter: "NVML: library not found (...)".
  std::string model_reason;
  [[nodiscard]] std::string source() const { return device || rapl ? "measured" : "model"; }
  // For summaries: "measured: NVML total energy, GPU 0 (...)", "model (NVML: ...)".
  [[nodiscard]] std::string describe() const;
};

[[nodiscard]] EnergyPlan plan_energy(Backend& backend);

}  // namespace kforge
