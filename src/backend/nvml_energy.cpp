// NVML's total-energy counter, resolved with dlopen. Only the five entry points below are used;
// their types are written here (nvml.h is not installed where the driver is absent), following
// NVML's API reference: every call returns nvmlReturn_t (0: success), a device is an opaque
// handle, the energy is an unsigned long long in millijoules.
#include "backend/nvml_energy.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace kforge {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;

std::string library_path(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("KFORGE_NVML_LIBRARY"); env && *env) return env;
  return "libnvidia-ml.so.1";
}

}  // namespace

struct NvmlEnergyReader::Api {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;                                        // nvmlInit_v2
  nvmlReturn_t (*shutdown)() = nullptr;                                    // nvmlShutdown
  const char* (*error_string)(nvmlReturn_t) = nullptr;                     // nvmlErrorString
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;             // nvmlDeviceGetHandleByIndex_v2
  nvmlReturn_t (*by_pci_bus_id)(const char*, nvmlDevice_t*) = nullptr;     // nvmlDeviceGetHandleByPciBusId_v2
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;           // nvmlDeviceGetName (optional)
  nvmlReturn_t (*total_energy)(nvmlDevice_t, unsigned long long*) = nullptr;  // nvmlDeviceGetTotalEnergyConsumption

  std::string describe(nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return fmt::format("{} (nvmlReturn_t {})", s ? s : "unknown error", r);
  }
  ~Api() {
    if (shutdown) shutdown();  // NVML counts its initializations: this undoes ours only
    // The library stays loaded: a driver library may not unload cleanly.
  }
};

std::shared_ptr<NvmlEnergyReader> NvmlEnergyReader::open(const std::string& library, const NvmlDevice& device,
                                                         std::string* why) {
  const auto fail = [&](const std::string& reason) -> std::shared_ptr<NvmlEnergyReader> {
    if (why) *why = "NVML: " + reason;
    return nullptr;
  };
  const std::string path = library_path(library);
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail("library not found: " + path + "; set KFORGE_NVML_LIBRARY to its path");
  auto api = std::make_shared<Api>();
  api->lib = lib;
  std::string missing;
  const auto sym = [&](auto& fn, const char* symbol, bool required = true) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (!fn && required) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  sym(api->error_string, "nvmlErrorString");
  sym(api->by_index, "nvmlDeviceGetHandleByIndex_v2");
  sym(api->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  sym(api->name, "nvmlDeviceGetName", false);
  sym(api->total_energy, "nvmlDeviceGetTotalEnergyConsumption");
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  sym(init, "nvmlInit_v2");
  sym(shutdown, "nvmlShutdown");
  if (!missing.empty()) return fail(path + " is too old: it lacks " + missing);
  if (const nvmlReturn_t r = init(); r != kNvmlSuccess) return fail("nvmlInit_v2: " + api->describe(r));
  api->shutdown = shutdown;  // from here on, ~Api undoes the initialization

  nvmlDevice_t dev = nullptr;
  std::string which;
  if (!device.pci_bus_id.empty()) {
    which = "GPU at PCI " + device.pci_bus_id;
    if (const nvmlReturn_t r = api->by_pci_bus_id(device.pci_bus_id.c_str(), &dev); r != kNvmlSuccess)
      return fail("no " + which + ": " + api->describe(r));
  } else {
    which = fmt::format("GPU {}", device.index);
    if (device.index < 0) return fail(fmt::format("no GPU {} (devices count from 0)", device.index));
    if (const nvmlReturn_t r = api->by_index(static_cast<unsigned>(device.index), &dev); r != kNvmlSuccess)
      return fail("no " + which + ": " + api->describe(r));
  }
  // Ask once now: a GPU before Volta says NOT_SUPPORTED (3), and then the caller uses the model.
  unsigned long long mj = 0;
  if (const nvmlReturn_t r = api->total_energy(dev, &mj); r != kNvmlSuccess)
    return fail("total energy of the " + which + ": " + api->describe(r));
  char name[96] = {};
  if (api->name && api->name(dev, name, sizeof name) == kNvmlSuccess) which += fmt::format(" ({})", name);

  std::shared_ptr<NvmlEnergyReader> reader(new NvmlEnergyReader());
  reader->api_ = std::move(api);
  reader->device_ = dev;
  reader->describe_ = "NVML total energy, " + which;
  return reader;
}

NvmlEnergyReader::~NvmlEnergyReader() = default;

std::uint64_t NvmlEnergyReader::energy_mj() {
  unsigned long long mj = 0;
  if (const nvmlReturn_t r = api_->total_energy(device_, &mj); r != kNvmlSuccess)
    throw std::runtime_error(describe_ + ": " + api_->describe(r));
  return mj;
}

std::string NvmlEnergyReader::describe() const { return describe_; }

}  // namespace kforge
