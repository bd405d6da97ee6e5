// The cuda backend: CUDA C++ compiled by NVRTC into CUBINs (cached on disk by content hash),
// loaded and launched through the driver API, which is dlopen'ed at run time, timed with CUDA
// events. Without a driver or a device it still compiles (for sm_90, or $KFORGE_CUDA_ARCH), so
// a compile error is reported on any machine; buffers and launches then throw NotSupported.
//
// A kernel that faults (an illegal address, a trap) leaves the CUDA context unusable: the
// driver reports the same sticky error on every later call, so once one run has thrown a
// LaunchError for a fault, later calls on this backend throw too. Untrusted kernels therefore
// run in a worker subprocess (evaluate_isolated), where a dead context dies with the worker.
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>

#include "backend/cuda/driver.hpp"
#include "backend/cuda/nvrtc_compiler.hpp"
#include "backend/nvml_energy.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"

namespace kforge {
namespace {

using cuda::Driver;

// The device's primary context, shared by the backend and everything it handed out, so a
// buffer that outlives the backend still frees into a live context.
struct Context {
  const Driver* d = nullptr;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUevent start = nullptr, stop = nullptr;

  Context(const Driver* drv, CUdevice device) : d(drv), dev(device) {
    d->check<NotSupported>(d->primary_ctx_retain(&ctx, dev), "cannot create a CUDA context");
    current();
    d->check<NotSupported>(d->event_create(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    d->check<NotSupported>(d->event_create(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  }
  ~Context() {
    d->ctx_set_current(ctx);
    if (start) d->event_destroy(start);
    if (stop) d->event_destroy(stop);
    d->primary_ctx_release(dev);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  // Binds the context to the calling thread (each thread has its own current context).
  void current() const { d->check<LaunchError>(d->ctx_set_current(ctx), "cuCtxSetCurrent"); }
};

struct CudaBuffer final : Buffer {
  CudaBuffer(std::shared_ptr<Context> c, std::size_t n) : Buffer(n), ctx(std::move(c)) {
    ctx->current();
    // Never zero bytes: cuMemAlloc refuses them, and a kernel may still take the pointer.
    ctx->d->check<LaunchError>(ctx->d->mem_alloc(&ptr, n > 0 ? n : 1),
                               "cuMemAlloc of " + std::to_string(n) + " bytes");
  }
  ~CudaBuffer() override {
    if (ctx->d->ctx_set_current(ctx->ctx) == CUDA_SUCCESS) ctx->d->mem_free(ptr);
  }
  std::shared_ptr<Context> ctx;
  CUdeviceptr ptr = 0;
};

struct CudaModule final : Module {
  ~CudaModule() override {
    if (module && ctx->d->ctx_set_current(ctx->ctx) == CUDA_SUCCESS) ctx->d->module_unload(module);
  }
  std::shared_ptr<Context> ctx;  // null when compiled without a device
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

unsigned dim(std::int64_t v, const char* what) {
  if (v < 1 || v > std::numeric_limits<unsigned>::max())
    throw LaunchError(std::string("launch geometry: ") + what + " = " + std::to_string(v) +
                      " is outside 1.." + std::to_string(std::numeric_limits<unsigned>::max()));
  return static_cast<unsigned>(v);
}

class CudaBackend final : public Backend, public DeviceEnergySource {
 public:
  explicit CudaBackend(const BackendOptions& o) : device_index_(o.device_index) {
    if (const char* a = std::getenv("KFORGE_CUDA_ARCH"); a && *a) arch_ = a;
    const Driver* d = cuda::driver(&why_);
    if (!d) return;
    int count = 0;
    if (const CUresult r = d->device_get_count(&count); r != CUDA_SUCCESS) {
      why_ = "cannot count CUDA devices: " + d->describe(r);
      return;
    }
    if (count == 0) {
      why_ = "no CUDA device on this machine (the driver is present)";
      return;
    }
    if (o.device_index < 0 || o.device_index >= count) {
      why_ = "no CUDA device " + std::to_string(o.device_index) + " (this machine has " +
             std::to_string(count) + ", numbered from 0)";
      return;
    }
    try {
      CUdevice dev = 0;
      d->check<NotSupported>(d->device_get(&dev, o.device_index), "cuDeviceGet");
      describe_device(d, dev);
      pci_bus_id_ = pci_bus_id(d, dev);
      ctx_ = std::make_shared<Context>(d, dev);
    } catch (const std::exception& e) {
      why_ = e.what();
      ctx_.reset();
    }
  }

  std::string name() const override { return "cuda"; }
  std::string device() const override { return ctx_ ? description_ : why_; }
  Lang lang() const override { return Lang::cuda; }
  bool can_run() const override { return ctx_ != nullptr; }

  std::unique_ptr<Buffer> alloc(std::size_t bytes) override {
    return std::make_unique<CudaBuffer>(require(), bytes);
  }
  void write(Buffer& dst, const void* src, std::size_t n) override {
    auto& b = static_cast<CudaBuffer&>(dst);
    const auto& c = require();
    c->current();
    c->d->check<LaunchError>(c->d->memcpy_htod(b.ptr, src, n), "cuMemcpyHtoD");
  }
  void read(const Buffer& src, void* dst, std::size_t n) override {
    const auto& b = static_cast<const CudaBuffer&>(src);
    const auto& c = require();
    c->current();
    c->d->check<LaunchError>(c->d->memcpy_dtoh(dst, b.ptr, n), "cuMemcpyDtoH");
  }

  // NVML's counter for this GPU, opened once: matched by PCI bus id (CUDA and NVML number
  // devices differently), by index where the driver cannot say its bus id.
  std::shared_ptr<EnergyCounter> energy_counter(std::string* why) override {
    if (!energy_tried_) {
      energy_tried_ = true;
      if (!ctx_) energy_why_ = "NVML: not tried, the cuda backend cannot run here: " + why_;
      else energy_ = NvmlEnergyReader::open({}, {device_index_, pci_bus_id_}, &energy_why_);
    }
    if (why) *why = energy_ ? std::string() : energy_why_;
    return energy_;
  }

  std::shared_ptr<Module> compile(const std::string& source, const std::string& entry,
                                  const Defines& defines, const std::string& source_name) override {
    cuda::Cubin cubin = cuda::compile_cubin(source, entry, defines, arch_, source_name);
    auto m = std::make_shared<CudaModule>();
    m->compile_s = cubin.compile_s;
    m->log = std::move(cubin.log);
    m->resources = cubin.resources;
    m->object_file = cubin.ptx_file;
    if (!ctx_) return m;  // compiled only: nothing to load it into
    m->ctx = ctx_;
    ctx_->current();
    const Driver* d = ctx_->d;
    if (const CUresult r = d->module_load_data(&m->module, cubin.image.data()); r != CUDA_SUCCESS) {
      const std::string what = "cannot load the " + cubin.arch + " CUBIN (NVRTC " +
                               cuda::nvrtc_version() + ") on " + description_ + ": " +
                               d->describe(r);
      if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_IMAGE ||
          r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_SOURCE)
        throw NotSupported(what + " (set KFORGE_CUDA_ARCH or update the driver)");
      throw CompileError(what, m->log);
    }
    if (const CUresult r =
            d->module_get_function(&m->function, m->module, cubin.entry_name.c_str());
        r != CUDA_SUCCESS)
      throw CompileError("the source defines no kernel '" + entry + "'",
                         "cuModuleGetFunction(" + cubin.entry_name + "): " + d->describe(r) +
                             "\ndeclare it as: extern \"C\" __global__ void " + entry + "(...)");
    return m;
  }

  double run(Module& mod, const LaunchGeometry& g, std::span<const Arg> args) override {
    const auto& c = require();
    auto& m = static_cast<CudaModule&>(mod);
    if (!m.function)
      throw LaunchError("the module was compiled without a device; compile it again");
    std::vector<CUdeviceptr> ptrs(args.size());
    std::vector<void*> params(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
      switch (args[i].kind) {
        case Arg::Kind::buffer:
          ptrs[i] = static_cast<CudaBuffer*>(args[i].buffer)->ptr + args[i].offset;
          params[i] = &ptrs[i];
          break;
        case Arg::Kind::i32:
          params[i] = const_cast<std::int32_t*>(&args[i].i32);
          break;
        case Arg::Kind::f32:
          params[i] = const_cast<float*>(&args[i].f32);
          break;
      }
    }
    const unsigned gx = dim(g.grid.x, "grid.x"), gy = dim(g.grid.y, "grid.y"),
                   gz = dim(g.grid.z, "grid.z"), bx = dim(g.block.x, "block.x"),
                   by = dim(g.block.y, "block.y"), bz = dim(g.block.z, "block.z");
    const Driver* d = c->d;
    c->current();
    d->check<LaunchError>(d->event_record(c->start, nullptr), "cuEventRecord");
    d->check<LaunchError>(
        d->launch_kernel(m.function, gx, gy, gz, bx, by, bz, 0, nullptr, params.data(), nullptr),
        "cuLaunchKernel (grid " + std::to_string(gx) + "x" + std::to_string(gy) + "x" +
            std::to_string(gz) + ", block " + std::to_string(bx) + "x" + std::to_string(by) + "x" +
            std::to_string(bz) + ")");
    d->check<LaunchError>(d->event_record(c->stop, nullptr), "cuEventRecord");
    // A fault in the kernel surfaces here (e.g. CUDA_ERROR_ILLEGAL_ADDRESS); the context is
    // dead from then on.
    d->check<LaunchError>(d->event_synchronize(c->stop), "the kernel failed");
    float ms = 0;
    d->check<LaunchError>(d->event_elapsed_time(&ms, c->start, c->stop), "cuEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  const std::shared_ptr<Context>& require() const {
    if (!ctx_) throw NotSupported("the cuda backend cannot run here: " + why_);
    return ctx_;
  }

  static std::string pci_bus_id(const Driver* d, CUdevice dev) {
    char id[32] = {};  // "0000:3B:00.0"; NVML takes the 4-digit domain too
    if (!d->device_get_pci_bus_id || d->device_get_pci_bus_id(id, sizeof id, dev) != CUDA_SUCCESS) return {};
    return id;
  }

  void describe_device(const Driver* d, CUdevice dev) {
    char name[256] = {};
    d->check<NotSupported>(d->device_get_name(name, sizeof name, dev), "cuDeviceGetName");
    int major = 0, minor = 0, sms = 0, version = 0;
    d->check<NotSupported>(
        d->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute");
    d->check<NotSupported>(
        d->device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute");
    d->device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    std::size_t mem = 0;
    d->device_total_mem(&mem, dev);
    d->driver_get_version(&version);
    if (!std::getenv("KFORGE_CUDA_ARCH") || !*std::getenv("KFORGE_CUDA_ARCH"))
      arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
    description_ = std::string(name) + " (sm_" + std::to_string(major) + std::to_string(minor) +
                   ", " + std::to_string(sms) + " SMs, " + std::to_string(mem >> 30) +
                   " GiB, driver " + std::to_string(version / 1000) + "." +
                   std::to_string(version % 1000 / 10) + ")";
  }

  std::string arch_ = "sm_90";
  std::string why_;          // why it cannot run, when it cannot
  std::string description_;  // the device, when it can
  std::shared_ptr<Context> ctx_;
  int device_index_ = 0;
  std::string pci_bus_id_;   // empty when the driver cannot say
  bool energy_tried_ = false;
  std::shared_ptr<EnergyCounter> energy_;
  std::string energy_why_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& opts) {
  return std::make_unique<CudaBackend>(opts);
}

}  // namespace kforge
