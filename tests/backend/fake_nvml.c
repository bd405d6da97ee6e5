/* A fake libnvidia-ml for the NVML energy tests (tests/backend/nvml_energy_test.cpp): the
 * entry points kforge resolves, for two GPUs, with an energy counter that follows a known law
 * chosen by $FAKE_NVML_LAW:
 *   per_read:K           GPU d's counter starts at (d+1)*1000000 mJ and advances by K*(d+1) mJ
 *                        at every read (exact, for the reader's own test)
 *   watts:W:tick_ms:T    W watts since nvmlInit_v2, in steps of T ms (a coarse counter, as
 *                        NVML's is): W*T mJ per step
 *   frozen               never moves
 *   not_supported        the energy call says NVML_ERROR_NOT_SUPPORTED (3), as before Volta
 *   init_fail            nvmlInit_v2 says NVML_ERROR_DRIVER_NOT_LOADED (9)
 * GPU d sits at PCI bus 00000000:0d+1:00.0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef void* nvmlDevice_t;

enum { kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kDriverNotLoaded = 9, kNotFound = 6 };

struct FakeGpu {
  int index;
  const char* pci;
  unsigned long long reads;
};
static struct FakeGpu gpus[2] = {{0, "00000000:01:00.0", 0}, {1, "00000000:02:00.0", 0}};
static struct timespec started;

static const char* law(void) {
  const char* s = getenv("FAKE_NVML_LAW");
  return s ? s : "per_read:1";
}

static double ms_since_init(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - started.tv_sec) * 1e3 + (now.tv_nsec - started.tv_nsec) * 1e-6;
}

nvmlReturn_t nvmlInit_v2(void) {
  if (strcmp(law(), "init_fail") == 0) return kDriverNotLoaded;
  clock_gettime(CLOCK_MONOTONIC, &started);
  return kSuccess;
}

nvmlReturn_t nvmlShutdown(void) { return kSuccess; }

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess: return "Success";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    case kDriverNotLoaded: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  if (index >= 2 || !device) return kInvalidArgument;
  *device = &gpus[index];
  return kSuccess;
}

/* NVML accepts a 4- or 8-digit domain: compare what follows the domain, ignoring case. */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pci, nvmlDevice_t* device) {
  const char* tail = pci ? strchr(pci, ':') : NULL;
  if (!tail || !device) return kInvalidArgument;
  for (int i = 0; i < 2; ++i)
    if (strcasecmp(strchr(gpus[i].pci, ':'), tail) == 0) {
      *device = &gpus[i];
      return kSuccess;
    }
  return kNotFound;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  snprintf(name, length, "Fake GPU %d", ((struct FakeGpu*)device)->index);
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* mj) {
  struct FakeGpu* gpu = (struct FakeGpu*)device;
  const char* l = law();
  const unsigned long long base = (gpu->index + 1) * 1000000ull;
  unsigned long long k = 0, w = 0, t = 0;
  if (strcmp(l, "not_supported") == 0) return kNotSupported;
  if (strcmp(l, "frozen") == 0) {
    *mj = base;
  } else if (sscanf(l, "per_read:%llu", &k) == 1) {
    *mj = base + k * (gpu->index + 1) * ++gpu->reads;
  } else if (sscanf(l, "watts:%llu:tick_ms:%llu", &w, &t) == 2 && t > 0) {
    *mj = base + w * t * (unsigned long long)(ms_since_init() / (double)t);
  } else {
    return kInvalidArgument;
  }
  return kSuccess;
}
