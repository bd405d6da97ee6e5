#include "eval/energy_plan.hpp"

namespace kforge {

EnergyPlan plan_energy(Backend& backend) {
  EnergyPlan p;
  if (auto* source = dynamic_cast<DeviceEnergySource*>(&backend)) {
    p.device = source->energy_counter(&p.model_reason);
    if (!p.device && p.model_reason.empty()) p.model_reason = "the " + backend.name() + " device's counter is unreadable";
  } else {
    // RAPL counts the host's packages: the right meter for the cpu backend (and OpenCL on a CPU
    // device), never for a GPU whose own counter cannot be read.
    p.rapl = EnergyReader::open();
  }
  return p;
}

std::string EnergyPlan::describe() const {
  if (device) return "measured: " + device->describe();
  if (rapl) return "measured: " + rapl->describe();
  return model_reason.empty() ? "model" : "model (" + model_reason + ")";
}

}  // namespace kforge
