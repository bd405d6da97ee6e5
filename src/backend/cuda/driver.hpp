#pragma once
// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that kforge starts on
// machines without a driver. Only the types come from <cuda.h>; nothing links libcuda.
#include <cuda.h>

#include <string>

namespace kforge::cuda {

struct Driver {
  // Versioned entry points (cuMemAlloc_v2, ...) are resolved by their versioned names; the
  // pointer types are those <cuda.h> declares for the macro names.
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDeviceTotalMem) device_total_mem = nullptr;
  // Optional (null when the driver lacks it): the PCI bus id that NVML's device is matched by.
  decltype(&::cuDeviceGetPCIBusId) device_get_pci_bus_id = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime) event_elapsed_time = nullptr;

  // "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
  [[nodiscard]] std::string describe(CUresult r) const;
  // Throws `E` with "<what>: <describe(r)>" unless r is CUDA_SUCCESS.
  template <class E>
  void check(CUresult r, const std::string& what) const {
    if (r != CUDA_SUCCESS) throw E(what + ": " + describe(r));
  }
};

// The process-wide driver, loaded and initialized (cuInit) once; nullptr when there is none,
// with the reason in `why` ("no CUDA driver (libcuda.so.1) on this machine", ...).
[[nodiscard]] const Driver* driver(std::string* why = nullptr);

}  // namespace kforge::cuda
