#pragma once
// A backend compiles a source with defines into a module, moves bytes, launches a grid of
// blocks and times it on its own clock. It never judges, searches or stores.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kforge/kernel.hpp"

namespace kforge {

using Defines = std::vector<std::pair<std::string, std::string>>;

class Buffer {
 public:
  virtual ~Buffer() = default;
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

 protected:
  explicit Buffer(std::size_t bytes) : bytes_(bytes) {}
  std::size_t bytes_;
};

// One kernel argument: a buffer, or a scalar passed by value. A buffer argument may be a
// region of a larger buffer (`offset`, `bytes`), so the verifier can surround what the kernel
// sees with guard bands; an offset must be a multiple of 4096 (OpenCL sub-buffer alignment).
struct Arg {
  enum class Kind { buffer, i32, f32 } kind;
  Buffer* buffer = nullptr;
  std::int32_t i32 = 0;
  float f32 = 0;
  std::size_t offset = 0, bytes = 0;  // bytes == 0: the whole buffer from offset on
  static Arg buf(Buffer& b, std::size_t offset = 0, std::size_t bytes = 0) {
    return {Kind::buffer, &b, 0, 0, offset, bytes};
  }
  static Arg i(std::int32_t v) { return {Kind::i32, nullptr, v, 0}; }
  static Arg f(float v) { return {Kind::f32, nullptr, 0, v}; }
};

// What the compiler says one kernel uses, where it can be had without running it: the cuda
// backend reads ptxas's report (so sm_90's registers and spills are known on a machine with no
// GPU), the opencl backend asks the driver. A figure the backend cannot know stays -1.
struct CompilerResources {
  std::string reported_by;          // "ptxas sm_90", "OpenCL driver"; empty: nothing known
  int registers = -1;               // per thread
  long long spill_store_bytes = -1, spill_load_bytes = -1;
  long long stack_bytes = -1;       // per-thread stack frame
  long long shared_bytes = -1;      // static shared (cuda) or local (opencl) memory per block
  long long private_bytes = -1;     // per work-item private memory (opencl)
  int barriers = -1;                // named barriers used (cuda)
  long long max_block_threads = -1; // the largest block this kernel can launch with (opencl)
  [[nodiscard]] bool known() const { return !reported_by.empty(); }
};

class Module {
 public:
  virtual ~Module() = default;
  double compile_s = 0;   // seconds spent compiling (0 when it came from the cache)
  std::string log;        // compiler warnings, if any
  CompilerResources resources;
  std::string object_file;  // the compiled code on disk, where there is one (cpu: the cached .so; cuda: the PTX)
};

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;    // "cpu", "opencl", "cuda"
  [[nodiscard]] virtual std::string device() const = 0;  // the device, in words
  [[nodiscard]] virtual Lang lang() const = 0;           // the language it compiles
  // False when this build has the backend but the machine cannot run it (no GPU): compile
  // still works, launches throw NotSupported.
  [[nodiscard]] virtual bool can_run() const = 0;

  virtual std::unique_ptr<Buffer> alloc(std::size_t bytes) = 0;
  virtual void write(Buffer& dst, const void* src, std::size_t bytes) = 0;
  virtual void read(const Buffer& src, void* dst, std::size_t bytes) = 0;

  // Buffers too large to copy whole, written and read in part, whose untouched bytes read as
  // zero and take no memory (cpu: buffers of 4 MiB or more are anonymous mappings, on the
  // shared zero page until written). The index_width check maps an input of 8 GiB and writes
  // only its last rows. A backend that returns false never gets the region calls.
  [[nodiscard]] virtual bool sparse_buffers() const { return false; }
  virtual void write_region(Buffer& dst, std::size_t offset, const void* src, std::size_t bytes) {
    (void)dst, (void)offset, (void)src, (void)bytes;
    throw std::logic_error(name() + " backend: no sparse buffers");
  }
  virtual void read_region(const Buffer& src, std::size_t offset, void* dst, std::size_t bytes) {
    (void)src, (void)offset, (void)dst, (void)bytes;
    throw std::logic_error(name() + " backend: no sparse buffers");
  }
  // Folds `bytes` of a sparse buffer from `offset` on onto `period` bytes of memory: every
  // period-long piece of the range is then the same memory (cpu: shared anonymous pages mapped
  // again and again), so a kernel can write all of it while it takes `period` of memory. The
  // index_width proxy (verify.cpp) folds an output past 2^31 elements that does not fit in
  // memory. Offset and period must be multiples of the page size. False: not supported.
  virtual bool fold_region(Buffer& b, std::size_t offset, std::size_t bytes, std::size_t period) {
    (void)b, (void)offset, (void)bytes, (void)period;
    return false;
  }

  // Throws CompileError with the compiler's log. `source_name` (the kernel's file, for the
  // compiler's messages) may be empty. The opencl and cuda backends put their prelude in front
  // of the source and restart the line count after it, so messages name the kernel's own lines.
  virtual std::shared_ptr<Module> compile(const std::string& source, const std::string& entry,
                                          const Defines& defines,
                                          const std::string& source_name = {}) = 0;
  // Launches and waits; returns the kernel's seconds on the backend's own clock.
  virtual double run(Module& m, const LaunchGeometry& g, std::span<const Arg> args) = 0;

  // What the last run() left changed that a kernel must leave as it found it (cpu: the
  // floating-point control state of a thread that ran a block), in words; empty when nothing.
  // The backend has already put it back.
  [[nodiscard]] virtual std::string launch_fp_environment_change() const { return {}; }
  // Race probing (verify's determinism repeats): variant 0 is the ordinary schedule, each
  // variant v >= 1 another one, seeded, where the backend can make one (cpu: other thread
  // counts, more threads than cores among them, and a shuffled block start order). Returns the
  // schedule in words; empty when the backend has no variants (its repeats are plain repeats).
  virtual std::string set_schedule(int variant, std::uint64_t seed) {
    (void)variant, (void)seed;
    return {};
  }
};

struct BackendOptions {
  int threads = 0;         // cpu: worker threads (0: all cores)
  int device_index = 0;    // opencl/cuda: which device
  // opencl: have the driver load each kernel's compiled code when it is compiled, not at its
  // first launch (PoCL opens a file then), so that a sandboxed worker launches with no file
  // opened. Set by kforge-worker only; not part of a request.
  bool load_before_launch = false;
  // cpu: kernels built with -fsanitize=thread and each block of a launch run on a thread of its
  // own (in waves of 64), so that ThreadSanitizer sees every pair of blocks as concurrent. Only
  // for a process started with ThreadSanitizer's runtime preloaded (src/eval/tsan_probe.cpp).
  bool tsan = false;
};

// The backends this build has, whether or not they can run here.
[[nodiscard]] std::vector<std::string> backend_names();
// Throws UsageError for a name this build lacks.
[[nodiscard]] std::unique_ptr<Backend> make_backend(const std::string& name,
                                                    const BackendOptions& opts = {});

}  // namespace kforge
