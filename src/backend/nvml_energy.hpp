#pragma once
// The GPU's energy counter through NVML (libnvidia-ml.so.1, which ships with the NVIDIA driver),
// loaded with dlopen at run time: no link dependency, and kforge starts where it is absent.
// $KFORGE_NVML_LIBRARY overrides the library's path (the tests point it at a fake NVML).
#include <memory>
#include <string>

#include "kforge/energy_counter.hpp"

namespace kforge {

// Which GPU to read: by PCI bus id where the caller knows it (CUDA and NVML number devices in
// different orders: CUDA fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, and after
// CUDA_VISIBLE_DEVICES), else by NVML's index.
struct NvmlDevice {
  int index = 0;
  std::string pci_bus_id;  // "0000:3B:00.0" as cuDeviceGetPCIBusId gives it; empty: use index
};

class NvmlEnergyReader final : public EnergyCounter {
 public:
  // `library` empty: $KFORGE_NVML_LIBRARY, else "libnvidia-ml.so.1". Null, with the reason in
  // `why` ("NVML: library not found (libnvidia-ml.so.1)", "NVML: total energy: Not Supported"),
  // when the library, the device or its total-energy counter (Volta and later) is missing.
  static std::shared_ptr<NvmlEnergyReader> open(const std::string& library, const NvmlDevice& device,
                                                std::string* why);
  ~NvmlEnergyReader() override;
  NvmlEnergyReader(const NvmlEnergyReader&) = delete;
  NvmlEnergyReader& operator=(const NvmlEnergyReader&) = delete;

  // nvmlDeviceGetTotalEnergyConsumption: mJ since the driver was loaded.
  [[nodiscard]] std::uint64_t energy_mj() override;
  [[nodiscard]] std::string describe() const override;

  struct Api;  // the resolved entry points (nvml_energy.cpp)

 private:
  NvmlEnergyReader() = default;
  std::shared_ptr<const Api> api_;
  void* device_ = nullptr;  // nvmlDevice_t
  std::string describe_;
};

}  // namespace kforge
