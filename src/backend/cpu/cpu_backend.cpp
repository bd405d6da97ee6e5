// The cpu backend: C++ sources compiled by the system compiler into shared objects (cached on
// disk by content hash), blocks launched on a thread pool, timed on the steady clock.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "backend/anonymous_mapping.hpp"
#include "backend/cpu/fp_environment.hpp"
#include "backend/kernel_includes.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "kforge/backend.hpp"
#include "kforge/cpu_target.hpp"
#include "kforge/error.hpp"
#include "kforge/subprocess.hpp"
#include "kforge/util.hpp"

#include <fmt/format.h>

namespace kforge {
namespace {

// -march comes apart (cpu_march): the instruction set is a choice, native by default.
constexpr const char* kFlags[] = {"-O3", "-std=c++20", "-fPIC", "-shared", "-fno-math-errno",
                                  "-fvisibility=hidden"};

using Entry = void (*)(const void* ctx, void* const* args);

struct CpuBuffer final : Buffer {
  explicit CpuBuffer(std::size_t n) : Buffer(n) {
    // 64-byte aligned, padded to whole cache lines, never a null pointer. Large buffers are
    // mapped on their own (AnonymousMapping: 2 MiB pages where the kernel allows it, untouched
    // pages free), so a buffer never reuses heap memory the allocator had split into small pages.
    const std::size_t bytes = ((n + 63) / 64 + 1) * 64;
    if (bytes < kMappedFrom) {
      data = static_cast<unsigned char*>(std::aligned_alloc(64, bytes));
      if (!data) throw std::bad_alloc();
      return;
    }
    map_ = std::make_unique<AnonymousMapping>(bytes);
    data = map_->data();
  }
  ~CpuBuffer() override {
    if (!map_) std::free(data);
  }
  bool fold(std::size_t offset, std::size_t bytes, std::size_t period) {
    return map_ && map_->fold(offset, bytes, period);
  }
  static constexpr std::size_t kMappedFrom = std::size_t{4} << 20;
  unsigned char* data = nullptr;

 private:
  std::unique_ptr<AnonymousMapping> map_;  // a large buffer's own mapping (data lies in it)
};

struct CpuModule final : Module {
  void* handle = nullptr;
  Entry entry = nullptr;
};

struct KfDim3 { long long x, y, z; };
struct KfCtx { KfDim3 block_idx, grid_dim, block_dim; int worker, workers; };  // = prelude's kf_ctx

const std::string& prelude_text() {
  static const std::string text = embedded_file("src/backend/cpu/prelude.hpp");
  return text;
}

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return trim(line.substr(line.find(':') + 1));
  return "unknown CPU";
}

// Read once: the sandboxed worker cannot open /proc/cpuinfo, and the name names the cached ceilings.
std::string cpu_model() {
  static const std::string model = read_cpu_model();
  return model;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& o)
      : threads_(o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
        march_(cpu_march()),
        tsan_(o.tsan),
        pool_(std::make_unique<cpu::ThreadPool>(threads_)) {}

  std::string name() const override { return "cpu"; }
  std::string device() const override {
    // A chosen instruction set is part of the device: its results, its ceilings (the micro-
    // benchmarks are compiled the same way) and its stored figures are kept apart from native's.
    const std::string isa = march_ == "native" ? "" : ", -march=" + march_;
    return cpu_model() + " (" + std::to_string(threads_) + " threads" + isa + ")";
  }
  Lang lang() const override { return Lang::cpp; }
  bool can_run() const override { return true; }

  std::unique_ptr<Buffer> alloc(std::size_t bytes) override { return std::make_unique<CpuBuffer>(bytes); }
  bool fold_region(Buffer& b, std::size_t offset, std::size_t bytes, std::size_t period) override {
    return static_cast<CpuBuffer&>(b).fold(offset, bytes, period);
  }
  void write(Buffer& dst, const void* src, std::size_t n) override {
    std::memcpy(static_cast<CpuBuffer&>(dst).data, src, n);
  }
  void read(const Buffer& src, void* dst, std::size_t n) override {
    std::memcpy(dst, static_cast<const CpuBuffer&>(src).data, n);
  }
  bool sparse_buffers() const override { return true; }
  void write_region(Buffer& dst, std::size_t offset, const void* src, std::size_t n) override {
    if (offset + n > dst.bytes()) throw std::logic_error("cpu backend: write_region past the buffer's end");
    std::memcpy(static_cast<CpuBuffer&>(dst).data + offset, src, n);
  }
  void read_region(const Buffer& src, std::size_t offset, void* dst, std::size_t n) override {
    if (offset + n > src.bytes()) throw std::logic_error("cpu backend: read_region past the buffer's end");
    std::memcpy(dst, static_cast<const CpuBuffer&>(src).data + offset, n);
  }

  std::shared_ptr<Module> compile(const std::string& kernel_source, const std::string& entry,
                                  const Defines& defines, const std::string& source_name) override {
    const std::string source = expand_kernel_includes(kernel_source, source_name);
    std::vector<std::string> argv{cpu_compiler(), "-march=" + march_};  // in the cache key below
    for (const char* f : kFlags) argv.emplace_back(f);
    // -g: ThreadSanitizer's reports name the kernel's lines (tsan_probe.cpp reads them).
    if (tsan_) argv.insert(argv.end(), {"-fsanitize=thread", "-g"});
    for (const auto& [k, v] : defines) argv.push_back("-D" + k + "=" + v);
    std::string key = prelude_text() + '\0' + source;
    for (const auto& a : argv) key += '\0' + a;
    const auto dir = cache_dir("cpu");
    const std::string stem = hex64(hash64(key));
    const auto so = dir / (stem + ".so");
    auto m = std::make_shared<CpuModule>();
    if (!std::filesystem::exists(so)) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto prelude = dir / ("prelude-" + hex64(hash64(prelude_text())) + ".hpp");
      if (!std::filesystem::exists(prelude)) write_file_atomic(prelude, prelude_text());
      const auto src = dir / (stem + ".cpp");
      write_file_atomic(src, source);
      const std::string tmp = so.string() + ".tmp." + std::to_string(::getpid());
      argv.insert(argv.end(), {"-include", prelude.string(), "-o", tmp, src.string()});
      const ProcessResult r = run_process(argv, {}, {.timeout_s = 300});
      if (!r.ok()) {
        std::filesystem::remove(tmp);
        throw CompileError("C++ compilation failed (" + r.describe() + ")", r.err + r.out);
      }
      std::filesystem::rename(tmp, so);
      m->log = r.err;
      m->compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    m->object_file = so.string();
    m->handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!m->handle) throw CompileError("cannot load compiled kernel", dlerror());
    m->entry = reinterpret_cast<Entry>(dlsym(m->handle, entry.c_str()));
    if (!m->entry)
      throw CompileError("the source defines no kernel '" + entry + "'",
                         "export it with KF_KERNEL(" + entry + ", your_function)");
    return m;
  }

  double run(Module& mod, const LaunchGeometry& g, std::span<const Arg> args) override {
    auto& m = static_cast<CpuModule&>(mod);
    // The arguments' addresses as the prelude's KF_KERNEL reads them: on the stack for the usual
    // few, so that a launch allocates nothing (a 4 KiB activation's whole launch is ~0.2 us).
    constexpr std::size_t kInline = 24;
    void* inline_ptrs[kInline];
    void* inline_argv[kInline];
    std::vector<void*> heap_ptrs, heap_argv;
    void** data_ptrs = inline_ptrs;
    void** argv = inline_argv;
    if (args.size() > kInline) {
      heap_ptrs.resize(args.size());
      heap_argv.resize(args.size());
      data_ptrs = heap_ptrs.data();
      argv = heap_argv.data();
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      switch (args[i].kind) {
        case Arg::Kind::buffer:
          data_ptrs[i] = static_cast<CpuBuffer*>(args[i].buffer)->data + args[i].offset;
          argv[i] = &data_ptrs[i];
          break;
        case Arg::Kind::i32: argv[i] = const_cast<std::int32_t*>(&args[i].i32); break;
        case Arg::Kind::f32: argv[i] = const_cast<float*>(&args[i].f32); break;
      }
    }
    const std::int64_t blocks = g.grid.x * g.grid.y * g.grid.z;
    widen_for_reversal(blocks);
    const int workers = tsan_ ? static_cast<int>(std::min<std::int64_t>(blocks, kWidestPool)) : pool_->size();
    const Entry entry = m.entry;
    fp_change_.clear();
    std::atomic<bool> fp_changed{false};
    std::mutex fp_mutex;
    const auto block = [&](std::int64_t b, int worker) {
      KfCtx c{{b % g.grid.x, (b / g.grid.x) % g.grid.y, b / (g.grid.x * g.grid.y)},
              {g.grid.x, g.grid.y, g.grid.z},
              {g.block.x, g.block.y, g.block.z},
              worker,
              workers};
      // Per block, on the thread that runs it (the control state is per thread): a few
      // nanoseconds against a block's microseconds at least.
      const cpu::FpControl before = cpu::FpControl::read();
      entry(&c, argv);
      const cpu::FpControl after = cpu::FpControl::read();
      if (after.same_controls(before)) return;
      before.restore();  // the rest of the run (kforge's and the next block's) as it was
      if (fp_changed.exchange(true)) return;
      std::lock_guard lock(fp_mutex);
      fp_change_ = fmt::format("block {} left {} changed", b, after.change_from(before));
    };
    const std::function<void(std::int64_t, int)> body = std::ref(block);  // held by reference: no allocation
    const auto t0 = std::chrono::steady_clock::now();
    if (tsan_) run_on_own_threads(blocks, body);
    else pool_->run(blocks, body);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  std::string launch_fp_environment_change() const override { return fp_change_; }

  // Variant v >= 1 cycles through more threads than cores (2n+1, 4n+3), the ordinary count n
  // and n+1, each with seeded start delays: falling with the block index (a mostly reversed
  // order) with more threads than cores, random otherwise. Never fewer threads than the ordinary schedule: a
  // kernel may rely on that many blocks running at once (the pool's promise). The reversed
  // variants widen the pool at launch to hold the whole grid's first blocks at once (see
  // widen_for_reversal).
  std::string set_schedule(int variant, std::uint64_t seed) override {
    const int n = threads_;
    const int counts[] = {2 * n + 1, n, 4 * n + 3, n + 1};
    const int want = variant <= 0 ? n : counts[(variant - 1) % 4];
    if (want != pool_->size()) {
      pool_.reset();  // its threads joined before the new ones start
      pool_ = std::make_unique<cpu::ThreadPool>(want);
    }
    delays_ = variant <= 0 ? 0 : (seed * 0x9e3779b97f4a7c15ull + variant) | 1;
    reverse_ = variant % 2 == 1;  // the variants with more threads than cores
    pool_->set_start_delays(delays_, reverse_);
    if (variant <= 0) return "the ordinary schedule";
    return fmt::format("{} threads on {} cores, blocks started in a {} order (start-delay seed {:#x})",
                       reverse_ ? fmt::format("{} or as many as the grid's blocks (up to {})", want, kWidestPool)
                                : std::to_string(want),
                       std::max(1u, std::thread::hardware_concurrency()),
                       reverse_ ? "mostly reversed" : "shuffled", delays_);
  }

 private:
  static constexpr int kWidestPool = 64;  // threads: 64 stacks of address space at most

  // The ThreadSanitizer build's launch: each block on a thread of its own, at most kWidestPool
  // alive at once: block b starts once block b - kWidestPool is joined. ThreadSanitizer sees the
  // pool's hand-offs (atomics in uninstrumented code) as no synchronisation at all, and two
  // blocks run one after another on one pool thread as ordered; fresh threads give it exactly
  // the grid's contract: blocks fewer than kWidestPool apart are unordered, the launch's start
  // and end are ordered (thread creation and join). The pool's promise holds (a block starts
  // after every lower one has, and kWidestPool consecutive blocks run at once: a row barrier
  // never deadlocks). Not seen: a race between blocks kWidestPool or more apart in the grid
  // (ordered through the join and the next creation).
  static void run_on_own_threads(std::int64_t blocks, const std::function<void(std::int64_t, int)>& body) {
    std::vector<std::thread> alive(static_cast<std::size_t>(std::min<std::int64_t>(blocks, kWidestPool)));
    for (std::int64_t b = 0; b < blocks; ++b) {
      const int slot = static_cast<int>(b % kWidestPool);
      auto& t = alive[static_cast<std::size_t>(slot)];
      if (t.joinable()) t.join();
      t = std::thread([&body, b, slot] { body(b, slot); });
    }
    for (auto& t : alive)
      if (t.joinable()) t.join();
  }

  // Blocks can only run out of order within the window of blocks claimed at once, one per
  // thread. With 4n+3 threads a race between block i and block i+w for w beyond that window
  // (the two K-slices of a split-K over 2w row bands) never overlaps, and on a small machine
  // it slipped through. So a reversed schedule holds up to 64 blocks at once: the last of them
  // starts first.
  void widen_for_reversal(std::int64_t blocks) {
    if (!reverse_ || delays_ == 0) return;
    const int wide = static_cast<int>(std::min<std::int64_t>(blocks, kWidestPool));
    if (wide <= pool_->size()) return;
    pool_.reset();
    pool_ = std::make_unique<cpu::ThreadPool>(wide);
    pool_->set_start_delays(delays_, true);
  }

  int threads_;  // the ordinary schedule's
  std::string march_;  // -march= for every kernel: "native" or $KFORGE_CPU_MARCH
  bool tsan_;          // BackendOptions::tsan: the ThreadSanitizer build and launch
  std::unique_ptr<cpu::ThreadPool> pool_;
  std::uint64_t delays_ = 0;  // the schedule's start-delay seed; 0: the ordinary schedule
  bool reverse_ = false;      // its blocks start in a mostly reversed order
  std::string fp_change_;  // what the last launch left changed; empty: nothing
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& opts) {
  return std::make_unique<CpuBackend>(opts);
}

}  // namespace kforge
