#include "backend/cuda/driver.hpp"

#include <dlfcn.h>
#include <sys/resource.h>

#include <initializer_list>

namespace kforge::cuda {
namespace {

// The first of `names` that libcuda exports (newest version first), or nullptr.
template <class F>
bool resolve(void* lib, F& fn, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* n : names)
    if (void* p = dlsym(lib, n)) {
      fn = reinterpret_cast<F>(p);
      return true;
    }
  missing += (missing.empty() ? "" : ", ") + std::string(*names.begin());
  return false;
}

// CUDA reserves tens of GiB of virtual address space at initialization, so a finite
// RLIMIT_AS (ulimit -v) makes cuInit fail with an out-of-memory error; say so.
std::string address_space_hint() {
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    return " (the address space is limited to " + std::to_string(rl.rlim_cur >> 20) +
           " MiB by RLIMIT_AS; CUDA needs it unlimited)";
  return {};
}

struct Loaded {
  Driver d;
  bool ok = false;
  std::string why;

  Loaded() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      why = "no CUDA driver (libcuda.so.1) on this machine";
      return;
    }
    std::string missing;
    resolve(lib, d.init, {"cuInit"}, missing);
    resolve(lib, d.driver_get_version, {"cuDriverGetVersion"}, missing);
    resolve(lib, d.get_error_name, {"cuGetErrorName"}, missing);
    resolve(lib, d.get_error_string, {"cuGetErrorString"}, missing);
    resolve(lib, d.device_get_count, {"cuDeviceGetCount"}, missing);
    resolve(lib, d.device_get, {"cuDeviceGet"}, missing);
    resolve(lib, d.device_get_name, {"cuDeviceGetName"}, missing);
    resolve(lib, d.device_get_attribute, {"cuDeviceGetAttribute"}, missing);
    resolve(lib, d.device_total_mem, {"cuDeviceTotalMem_v2"}, missing);
    resolve(lib, d.primary_ctx_retain, {"cuDevicePrimaryCtxRetain"}, missing);
    resolve(lib, d.primary_ctx_release, {"cuDevicePrimaryCtxRelease_v2"}, missing);
    resolve(lib, d.ctx_set_current, {"cuCtxSetCurrent"}, missing);
    resolve(lib, d.ctx_synchronize, {"cuCtxSynchronize"}, missing);
    resolve(lib, d.module_load_data, {"cuModuleLoadData"}, missing);
    resolve(lib, d.module_unload, {"cuModuleUnload"}, missing);
    resolve(lib, d.module_get_function, {"cuModuleGetFunction"}, missing);
    resolve(lib, d.mem_alloc, {"cuMemAlloc_v2"}, missing);
    resolve(lib, d.mem_free, {"cuMemFree_v2"}, missing);
    resolve(lib, d.memcpy_htod, {"cuMemcpyHtoD_v2"}, missing);
    resolve(lib, d.memcpy_dtoh, {"cuMemcpyDtoH_v2"}, missing);
    resolve(lib, d.launch_kernel, {"cuLaunchKernel"}, missing);
    resolve(lib, d.event_create, {"cuEventCreate"}, missing);
    resolve(lib, d.event_destroy, {"cuEventDestroy_v2"}, missing);
    resolve(lib, d.event_record, {"cuEventRecord"}, missing);
    resolve(lib, d.event_synchronize, {"cuEventSynchronize"}, missing);
    // _v2 (driver >= 12.8) and the original have the same signature and, for two events
    // recorded on one stream, the same meaning.
    resolve(lib, d.event_elapsed_time, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing);
    std::string optional_missing;  // not required: energy then matches NVML's device by index
    resolve(lib, d.device_get_pci_bus_id, {"cuDeviceGetPCIBusId"}, optional_missing);
    if (!missing.empty()) {
      why = "the CUDA driver (libcuda.so.1) is too old: it lacks " + missing;
      return;
    }
    if (const CUresult r = d.init(0); r != CUDA_SUCCESS) {
      why = "the CUDA driver did not initialize: " + d.describe(r);
      if (r == CUDA_ERROR_OUT_OF_MEMORY) why += address_space_hint();
      if (r == CUDA_ERROR_STUB_LIBRARY)
        why += " (libcuda.so.1 is the toolkit's stub, not a driver)";
      return;
    }
    ok = true;  // the library stays loaded for the life of the process
  }
};

}  // namespace

std::string Driver::describe(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (get_error_name) get_error_name(r, &name);
  if (get_error_string) get_error_string(r, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(static_cast<int>(r));
  if (text) out += std::string(": ") + text;
  return out;
}

const Driver* driver(std::string* why) {
  static const Loaded loaded;  // thread-safe, once
  if (why) *why = loaded.why;
  return loaded.ok ? &loaded.d : nullptr;
}

}  // namespace kforge::cuda
