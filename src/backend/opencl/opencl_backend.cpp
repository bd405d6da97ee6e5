// The opencl backend: OpenCL C sources built by the ICD's driver (PoCL here, any vendor's
// elsewhere), program binaries cached on disk by content hash, launches timed by the queue's
// profiling events. Without a platform or a device it still constructs: can_run() is false and
// device() says why.
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "backend/anonymous_mapping.hpp"
#include "backend/opencl/cl_errors.hpp"
#include "backend/with_prelude.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

using opencl::error_name;

// Throws LaunchError naming the call and the error code.
void check(cl_int rc, const char* call) {
  if (rc != CL_SUCCESS) throw LaunchError(std::string(call) + " failed: " + error_name(rc));
}

// An owned OpenCL object, released once.
template <class T, cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  void reset() {
    if (h_) Release(h_);
    h_ = nullptr;
  }
  [[nodiscard]] T get() const { return h_; }

 private:
  T h_ = nullptr;
};

using ContextH = Handle<cl_context, clReleaseContext>;
using QueueH = Handle<cl_command_queue, clReleaseCommandQueue>;
using MemH = Handle<cl_mem, clReleaseMemObject>;
using ProgramH = Handle<cl_program, clReleaseProgram>;
using KernelH = Handle<cl_kernel, clReleaseKernel>;
using EventH = Handle<cl_event, clReleaseEvent>;

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  return trim(s.c_str());
}

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  return trim(s.c_str());
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

std::string build_log(cl_program p, cl_device_id d) {
  std::size_t n = 0;
  if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return {};
  std::string s(n, '\0');
  if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr) != CL_SUCCESS)
    return {};
  return trim(s.c_str());
}

// The first line of a build log that reports an error, for a short message.
std::string first_error_line(const std::string& log) {
  for (const std::string& line : split(log, '\n'))
    if (line.find("error") != std::string::npos) return trim(line);
  return {};
}

struct Candidate {
  cl_platform_id platform;
  cl_device_id device;
  bool gpu;
};

// Every device of every platform, GPUs first (stable otherwise). Empty with `why` set on failure.
std::vector<Candidate> all_devices(std::string& why) {
  cl_uint np = 0;
  cl_int rc = clGetPlatformIDs(0, nullptr, &np);
  if (rc != CL_SUCCESS || np == 0) {
    why = "no OpenCL platform found (" + (rc != CL_SUCCESS ? error_name(rc) : "0 platforms") +
          "); install a driver (an ICD in /etc/OpenCL/vendors), e.g. pocl-opencl-icd";
    return {};
  }
  std::vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  std::vector<Candidate> out;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devs(nd);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : devs) {
      cl_device_type type = 0;
      clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      out.push_back({p, d, (type & CL_DEVICE_TYPE_GPU) != 0});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.gpu && !b.gpu; });
  if (out.empty()) why = "OpenCL platforms found, but none has a device";
  return out;
}

// What buffers and modules share with the backend, so each may outlive the others.
struct Device {
  cl_device_id id = nullptr;
  ContextH context;
  QueueH queue;
  std::string name;  // "<platform>: <device>"
  std::string cache_key;
  std::size_t max_wg = 0;
  std::vector<std::size_t> max_item;
  cl_ulong local_mem = 0;
  // The device works in the host's memory (PoCL; integrated GPUs): its largest buffers are then
  // made over an AnonymousMapping of ours (CL_MEM_USE_HOST_PTR), untouched pages free and zero,
  // which is what the index_width check needs (Backend::sparse_buffers).
  bool host_memory = false;
  ~Device() {
    if (queue.get()) clFinish(queue.get());
  }
};

struct ClBuffer final : Buffer {
  // Buffers from this size on live in a mapping of ours where the device shares the host's
  // memory: only the index_width check's wide tensors (4 GiB and more) come near it, so every
  // ordinary buffer is the driver's own.
  static constexpr std::size_t kHostMappedFrom = std::size_t{1} << 30;
  ClBuffer(std::shared_ptr<Device> d, std::size_t n) : Buffer(n), dev(std::move(d)) {
    cl_int rc = CL_SUCCESS;
    cl_mem_flags flags = CL_MEM_READ_WRITE;
    if (dev->host_memory && n >= kHostMappedFrom) {
      host = std::make_unique<AnonymousMapping>(n);  // std::bad_alloc where it cannot be mapped
      flags |= CL_MEM_USE_HOST_PTR;
    }
    mem = MemH(clCreateBuffer(dev->context.get(), flags, std::max<std::size_t>(n, 1),
                              host ? host->data() : nullptr, &rc));
    if (rc == CL_MEM_OBJECT_ALLOCATION_FAILURE || rc == CL_OUT_OF_HOST_MEMORY ||
        rc == CL_INVALID_BUFFER_SIZE)
      throw std::bad_alloc();
    check(rc, "clCreateBuffer");
  }
  std::shared_ptr<Device> dev;
  std::unique_ptr<AnonymousMapping> host;  // declared before mem: released after it
  MemH mem;
};

// What the driver says the kernel uses (any device, no launch needed); a query the driver
// refuses leaves its figure unknown (-1).
CompilerResources kernel_resources(cl_kernel k, cl_device_id dev) {
  CompilerResources r;
  r.reported_by = "OpenCL driver";
  cl_ulong local = 0, priv = 0;
  std::size_t group = 0;
  if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, nullptr) == CL_SUCCESS)
    r.shared_bytes = static_cast<long long>(local);
  if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv, nullptr) == CL_SUCCESS)
    r.private_bytes = static_cast<long long>(priv);
  if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof group, &group, nullptr) == CL_SUCCESS)
    r.max_block_threads = static_cast<long long>(group);
  return r;
}

struct ClModule final : Module {
  std::shared_ptr<Device> dev;
  ProgramH program;
  KernelH kernel;
  std::string entry;
};

class OpenClBackend final : public Backend {
 public:
  explicit OpenClBackend(const BackendOptions& o) : load_before_launch_(o.load_before_launch) {
    std::string why;
    const std::vector<Candidate> devices = all_devices(why);
    if (devices.empty()) {
      why_not_ = why;
      return;
    }
    if (o.device_index < 0 || o.device_index >= static_cast<int>(devices.size())) {
      std::string list;
      for (std::size_t i = 0; i < devices.size(); ++i)
        list += "\n  " + std::to_string(i) + ": " + platform_string(devices[i].platform, CL_PLATFORM_NAME) +
                ": " + device_string(devices[i].device, CL_DEVICE_NAME);
      throw UsageError("OpenCL device index " + std::to_string(o.device_index) +
                       " is out of range; this machine has:" + list);
    }
    const Candidate& c = devices[o.device_index];
    auto d = std::make_shared<Device>();
    d->id = c.device;
    const std::string pname = platform_string(c.platform, CL_PLATFORM_NAME);
    d->name = pname + ": " + device_string(c.device, CL_DEVICE_NAME);
    d->cache_key = d->name + '\0' + platform_string(c.platform, CL_PLATFORM_VERSION) + '\0' +
                   device_string(c.device, CL_DEVICE_VERSION) + '\0' +
                   device_string(c.device, CL_DRIVER_VERSION);
    try {
      const cl_context_properties props[] = {
          CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(c.platform), 0};
      cl_int rc = CL_SUCCESS;
      d->context = ContextH(clCreateContext(props, 1, &c.device, nullptr, nullptr, &rc));
      check(rc, "clCreateContext");
      d->queue = QueueH(
          clCreateCommandQueue(d->context.get(), c.device, CL_QUEUE_PROFILING_ENABLE, &rc));
      check(rc, "clCreateCommandQueue");
      d->max_wg = device_value<std::size_t>(c.device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
      const auto dims = device_value<cl_uint>(c.device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
      d->max_item.resize(dims);
      check(clGetDeviceInfo(c.device, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(std::size_t),
                            d->max_item.data(), nullptr),
            "clGetDeviceInfo");
      d->local_mem = device_value<cl_ulong>(c.device, CL_DEVICE_LOCAL_MEM_SIZE);
      d->host_memory = device_value<cl_bool>(c.device, CL_DEVICE_HOST_UNIFIED_MEMORY) == CL_TRUE;
    } catch (const LaunchError& e) {
      why_not_ = d->name + " is unusable: " + e.what();
      return;
    }
    dev_ = std::move(d);
  }

  std::string name() const override { return "opencl"; }
  std::string device() const override { return dev_ ? dev_->name : "no OpenCL device: " + why_not_; }
  Lang lang() const override { return Lang::opencl; }
  bool can_run() const override { return dev_ != nullptr; }

  std::unique_ptr<Buffer> alloc(std::size_t bytes) override {
    return std::make_unique<ClBuffer>(need(), bytes);
  }

  void write(Buffer& dst, const void* src, std::size_t n) override {
    auto& b = static_cast<ClBuffer&>(dst);
    if (n > b.bytes()) throw LaunchError(copy_size_message("write", n, b.bytes()));
    if (n == 0) return;
    check(clEnqueueWriteBuffer(b.dev->queue.get(), b.mem.get(), CL_TRUE, 0, n, src, 0, nullptr,
                               nullptr),
          "clEnqueueWriteBuffer");
  }

  void read(const Buffer& src, void* dst, std::size_t n) override {
    const auto& b = static_cast<const ClBuffer&>(src);
    if (n > b.bytes()) throw LaunchError(copy_size_message("read", n, b.bytes()));
    if (n == 0) return;
    check(clEnqueueReadBuffer(b.dev->queue.get(), b.mem.get(), CL_TRUE, 0, n, dst, 0, nullptr,
                              nullptr),
          "clEnqueueReadBuffer");
  }

  // Backend::sparse_buffers: on a device in the host's memory, whose buffers of 1 GiB and more
  // are our own mappings (ClBuffer); a GPU with memory of its own has no zero page to lend.
  bool sparse_buffers() const override { return dev_ && dev_->host_memory; }
  void write_region(Buffer& dst, std::size_t offset, const void* src, std::size_t n) override {
    auto& b = static_cast<ClBuffer&>(dst);
    if (offset + n > b.bytes()) throw std::logic_error("opencl backend: write_region past the buffer's end");
    if (n == 0) return;
    check(clEnqueueWriteBuffer(b.dev->queue.get(), b.mem.get(), CL_TRUE, offset, n, src, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
  }
  void read_region(const Buffer& src, std::size_t offset, void* dst, std::size_t n) override {
    const auto& b = static_cast<const ClBuffer&>(src);
    if (offset + n > b.bytes()) throw std::logic_error("opencl backend: read_region past the buffer's end");
    if (n == 0) return;
    check(clEnqueueReadBuffer(b.dev->queue.get(), b.mem.get(), CL_TRUE, offset, n, dst, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
  }
  // The driver works in our mapping (CL_MEM_USE_HOST_PTR on a device in the host's memory), so
  // folding the mapping folds what the kernel writes.
  bool fold_region(Buffer& buf, std::size_t offset, std::size_t bytes, std::size_t period) override {
    auto& b = static_cast<ClBuffer&>(buf);
    return b.host && b.host->fold(offset, bytes, period);
  }

  std::shared_ptr<Module> compile(const std::string& kernel_source, const std::string& entry,
                                  const Defines& defines, const std::string& source_name) override {
    const std::shared_ptr<Device> d = need();
    const std::string source =
        with_prelude("src/backend/opencl/prelude.cl", kernel_source, source_name, "kernel.cl");
    std::string options = "-cl-std=CL1.2";
    for (const auto& [k, v] : defines) options += " -D " + k + "=" + v;
    const auto path = cache_dir("opencl") /
                      (hex64(hash64(d->cache_key + '\0' + source + '\0' + options)) + ".bin");
    auto m = std::make_shared<ClModule>();
    m->dev = d;
    m->entry = entry;
    if (std::filesystem::exists(path)) m->program = from_binary(*d, path, options);
    if (!m->program.get()) {
      const auto t0 = std::chrono::steady_clock::now();
      m->program = from_source(*d, source, options, m->log);
      m->compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      save_binary(m->program.get(), path);
    } else if (load_before_launch_) {
      // Asking for the program's binary makes PoCL build and load its kernels' code now; a
      // program built from source above was asked already (save_binary).
      (void)program_binary(m->program.get());
    }
    cl_int rc = CL_SUCCESS;
    m->kernel = KernelH(clCreateKernel(m->program.get(), entry.c_str(), &rc));
    if (rc == CL_INVALID_KERNEL_NAME)
      throw CompileError("the source defines no kernel '" + entry + "'",
                         "kernels in the program: " + kernel_names(m->program.get()) +
                             "\ndeclare it as `__kernel void " + entry + "(...)`");
    if (rc != CL_SUCCESS)
      throw CompileError("clCreateKernel(" + entry + ") failed: " + error_name(rc), m->log);
    m->resources = kernel_resources(m->kernel.get(), d->id);
    return m;
  }

  double run(Module& mod, const LaunchGeometry& g, std::span<const Arg> args) override {
    auto& m = static_cast<ClModule&>(mod);
    Device& d = *m.dev;
    cl_kernel k = m.kernel.get();
    std::vector<MemH> regions;  // sub-buffers for region arguments, alive until the launch ends
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      cl_int rc = CL_SUCCESS;
      switch (a.kind) {
        case Arg::Kind::buffer: {
          cl_mem mem = static_cast<ClBuffer*>(a.buffer)->mem.get();
          if (a.offset != 0 || a.bytes != 0) {
            const cl_buffer_region region{a.offset, a.bytes ? a.bytes : a.buffer->bytes() - a.offset};
            regions.emplace_back(clCreateSubBuffer(mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                                   &region, &rc));
            if (rc != CL_SUCCESS)
              throw LaunchError("clCreateSubBuffer(offset " + std::to_string(a.offset) + ") failed: " +
                                error_name(rc));
            mem = regions.back().get();
          }
          rc = clSetKernelArg(k, static_cast<cl_uint>(i), sizeof(cl_mem), &mem);
          break;
        }
        case Arg::Kind::i32: {
          const cl_int v = a.i32;
          rc = clSetKernelArg(k, static_cast<cl_uint>(i), sizeof v, &v);
          break;
        }
        case Arg::Kind::f32: {
          const cl_float v = a.f32;
          rc = clSetKernelArg(k, static_cast<cl_uint>(i), sizeof v, &v);
          break;
        }
      }
      if (rc != CL_SUCCESS)
        throw LaunchError("clSetKernelArg(" + m.entry + ", argument " + std::to_string(i) +
                          ") failed: " + error_name(rc));
    }
    const std::size_t local[3] = {static_cast<std::size_t>(g.block.x),
                                  static_cast<std::size_t>(g.block.y),
                                  static_cast<std::size_t>(g.block.z)};
    const std::size_t global[3] = {static_cast<std::size_t>(g.grid.x * g.block.x),
                                   static_cast<std::size_t>(g.grid.y * g.block.y),
                                   static_cast<std::size_t>(g.grid.z * g.block.z)};
    check_work_group(m, local);
    cl_event ev = nullptr;
    cl_int rc = clEnqueueNDRangeKernel(d.queue.get(), k, 3, nullptr, global, local, 0, nullptr, &ev);
    if (rc != CL_SUCCESS)
      throw LaunchError("clEnqueueNDRangeKernel(" + m.entry + ", global " + dims(global) +
                        ", local " + dims(local) + ") failed: " + error_name(rc));
    EventH event(ev);
    check(clWaitForEvents(1, &ev), "clWaitForEvents");
    cl_int status = CL_COMPLETE;
    check(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
          "clGetEventInfo");
    if (status < 0) throw LaunchError("kernel " + m.entry + " failed on the device: " + error_name(status));
    cl_ulong start = 0, end = 0;
    check(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr),
          "clGetEventProfilingInfo(START)");
    check(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr),
          "clGetEventProfilingInfo(END)");
    return static_cast<double>(end - start) * 1e-9;
  }

 private:
  std::shared_ptr<Device> need() const {
    if (!dev_) throw NotSupported("the opencl backend cannot run here: " + why_not_);
    return dev_;
  }

  static std::string copy_size_message(const char* what, std::size_t n, std::size_t have) {
    return std::string("opencl ") + what + " of " + std::to_string(n) + " bytes exceeds the " +
           std::to_string(have) + "-byte buffer";
  }

  static std::string dims(const std::size_t v[3]) {
    return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
  }

  // Refuses, with the reason, a work-group the device or this kernel cannot take.
  static void check_work_group(const ClModule& m, const std::size_t local[3]) {
    const Device& d = *m.dev;
    const std::size_t items = local[0] * local[1] * local[2];
    for (std::size_t i = 0; i < 3 && i < d.max_item.size(); ++i)
      if (local[i] > d.max_item[i])
        throw LaunchError("work-group " + dims(local) + " exceeds the device's " +
                          std::to_string(d.max_item[i]) + " work-items in dimension " +
                          std::to_string(i));
    std::size_t kernel_max = 0;
    check(clGetKernelWorkGroupInfo(m.kernel.get(), d.id, CL_KERNEL_WORK_GROUP_SIZE,
                                   sizeof kernel_max, &kernel_max, nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    if (items > kernel_max)
      throw LaunchError("work-group " + dims(local) + " has " + std::to_string(items) +
                        " work-items; kernel " + m.entry + " allows at most " +
                        std::to_string(kernel_max) + " on this device (device max " +
                        std::to_string(d.max_wg) + ")");
    cl_ulong local_mem = 0;
    check(clGetKernelWorkGroupInfo(m.kernel.get(), d.id, CL_KERNEL_LOCAL_MEM_SIZE,
                                   sizeof local_mem, &local_mem, nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_LOCAL_MEM_SIZE)");
    if (local_mem > d.local_mem)
      throw LaunchError("kernel " + m.entry + " uses " + std::to_string(local_mem) +
                        " bytes of local memory; the device has " + std::to_string(d.local_mem));
  }

  static ProgramH from_source(const Device& d, const std::string& source,
                              const std::string& options, std::string& log) {
    const char* text = source.c_str();
    const std::size_t len = source.size();
    cl_int rc = CL_SUCCESS;
    ProgramH p(clCreateProgramWithSource(d.context.get(), 1, &text, &len, &rc));
    if (rc != CL_SUCCESS)
      throw CompileError("clCreateProgramWithSource failed: " + error_name(rc), {});
    rc = clBuildProgram(p.get(), 1, &d.id, options.c_str(), nullptr, nullptr);
    log = build_log(p.get(), d.id);
    if (rc != CL_SUCCESS) {
      std::string what = "OpenCL build failed (" + error_name(rc) + ")";
      if (const std::string line = first_error_line(log); !line.empty()) what += ": " + line;
      throw CompileError(what, log.empty() ? "(the driver gave no build log)" : log);
    }
    return p;
  }

  // A program from a cached binary; empty (so the caller builds from source) if it fails.
  static ProgramH from_binary(const Device& d, const std::filesystem::path& path,
                              const std::string& options) {
    std::string bin;
    try {
      bin = read_file(path);
    } catch (const std::exception&) {
      return {};
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(bin.data());
    const std::size_t len = bin.size();
    cl_int status = CL_SUCCESS, rc = CL_SUCCESS;
    ProgramH p(clCreateProgramWithBinary(d.context.get(), 1, &d.id, &len, &bytes, &status, &rc));
    if (rc != CL_SUCCESS || status != CL_SUCCESS) return {};
    if (clBuildProgram(p.get(), 1, &d.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
      return {};
    return p;
  }

  // The program's binary for its one device; empty if the driver cannot give it.
  static std::string program_binary(cl_program p) {
    std::size_t size = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS ||
        size == 0)
      return {};
    std::string bin(size, '\0');
    unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return {};
    return bin;
  }

  // Best effort: a program whose binary cannot be had is simply rebuilt next time.
  static void save_binary(cl_program p, const std::filesystem::path& path) {
    const std::string bin = program_binary(p);
    if (bin.empty()) return;
    try {
      write_file_atomic(path, bin);
    } catch (const std::exception&) {
    }
  }

  static std::string kernel_names(cl_program p) {
    std::size_t n = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &n) != CL_SUCCESS || n == 0)
      return "(none)";
    std::string s(n, '\0');
    if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, n, s.data(), nullptr) != CL_SUCCESS)
      return "(unknown)";
    s = trim(s.c_str());
    return s.empty() ? "(none)" : s;
  }

  bool load_before_launch_ = false;
  std::shared_ptr<Device> dev_;
  std::string why_not_;
};

}  // namespace

std::unique_ptr<Backend> make_opencl_backend(const BackendOptions& opts) {
  // One at a time: PoCL's platform and device queries crash when two threads open it at once
  // (found by concurrent `ceilings` calls to `kforge mcp`).
  static std::mutex opening;
  std::lock_guard lock(opening);
  return std::make_unique<OpenClBackend>(opts);
}

}  // namespace kforge
