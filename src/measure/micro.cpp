// Runs the ceilings micro-benchmarks (src/measure/ceilings/) through a backend like any
// kernel: peak operation rates per dtype, and STREAM bandwidths from DRAM, from the
// last-level cache and (cpu) from the threads' L2 caches, each for all threads and for one.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string_view>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

// Each thread's chunks of a STREAM array in the all-threads runs (see Micro::stream).
constexpr int kBlocksPerWorker = 4;

class Micro {
 public:
  Micro(Backend& b, const std::function<void(const std::string&)>& progress)
      : b_(b), progress_(progress) {
    switch (b.lang()) {
      case Lang::cpp: source_ = embedded_file("src/measure/ceilings/ceilings.cpp"); break;
      case Lang::opencl: source_ = embedded_file("src/measure/ceilings/ceilings.cl"); break;
      case Lang::cuda: source_ = embedded_file("src/measure/ceilings/ceilings.cu"); break;
    }
    if (cpu()) workers_ = probe_workers();
  }

  [[nodiscard]] bool cpu() const { return b_.lang() == Lang::cpp; }
  [[nodiscard]] int workers() const { return workers_; }

  // The best rate of a peak kernel in operations per second; 0 when the device lacks it.
  double peak(const std::string& entry, bool one) {
    tell("peak " + entry + (one ? ", one thread" : ""));
    Module* m = module(entry);
    if (!m) return 0;
    LaunchGeometry g;
    if (cpu()) g = {{one ? 1 : workers_, 1, 1}, {1, 1, 1}};
    else g = {{one ? 1 : (b_.lang() == Lang::opencl ? 32 : 4096), 1, 1}, {256, 1, 1}};
    const std::int64_t items = g.grid.x * g.block.x;
    auto out = b_.alloc(static_cast<std::size_t>(items + 1) * 4);
    auto rate = [&](int iters, double& seconds) {
      const Arg args[] = {Arg::buf(*out), Arg::i(iters)};
      seconds = b_.run(*m, g, args);
      std::vector<float> h(static_cast<std::size_t>(items + 1));
      b_.read(*out, h.data(), h.size() * 4);
      return static_cast<double>(h.back()) * iters * static_cast<double>(items) / seconds;
    };
    int iters = 64;
    double seconds = 0, best = rate(iters, seconds);
    if (best <= 0) return 0;
    // Short launches (>= 5 ms), best of many: on a busy machine some run undisturbed.
    while (seconds < 0.005 && iters < (1 << 28)) best = rate(iters *= 2, seconds);
    for (int rep = 0; rep < 20; ++rep) best = std::max(best, rate(iters, seconds));
    return best;
  }

  // STREAM's four kernels over arrays of `n` floats; `reps` sweeps per launch (cpu only).
  Bandwidth stream(std::int64_t n, int reps, int launches, bool one, const std::string& level) {
    Bandwidth bw;
    if (one && !cpu()) return bw;  // one work-item cannot stream; not measured
    const std::size_t bytes = static_cast<std::size_t>(n) * 4;
    auto a = b_.alloc(bytes), x = b_.alloc(bytes), y = b_.alloc(bytes);
    // All threads: kBlocksPerWorker chunks per thread, taken from the pool's queue as a
    // kernel's blocks are, so a neighbour that holds one core slows one thread's share only. With
    // one chunk per thread the slowest thread set the time, and under such a neighbour the
    // all-threads roof came out no faster than one thread's (LLC read 99 GB/s on the 2-core
    // EPYC), below what a kernel with many blocks reaches at the same moment.
    const std::int64_t blocks = one ? 1 : std::int64_t{workers_} * kBlocksPerWorker;
    auto out = b_.alloc(static_cast<std::size_t>(std::max<std::int64_t>(blocks, n / 64) + 1) * 4);
    std::vector<float> init(static_cast<std::size_t>(n), 1.0f);
    for (Buffer* buf : {a.get(), x.get(), y.get()}) b_.write(*buf, init.data(), bytes);  // first touch
    init = {};
    const LaunchGeometry g = cpu() ? LaunchGeometry{{blocks, 1, 1}, {1, 1, 1}}
                                   : LaunchGeometry{{(n + 255) / 256, 1, 1}, {256, 1, 1}};
    const int r = cpu() ? reps : 1;
    const int ni = static_cast<int>(n);
    // OpenCL's read takes 64 floats per work-item (see ceilings.cl).
    const LaunchGeometry g_read =
        b_.lang() == Lang::opencl ? LaunchGeometry{{(n / 64 + 255) / 256, 1, 1}, {256, 1, 1}} : g;
    auto best = [&](const std::string& entry, std::span<const Arg> args, double arrays) {
      tell(level + " " + entry + (one ? ", one thread" : ""));
      Module* m = module(entry);
      if (!m) return 0.0;
      double best_s = 1e30;
      for (int i = 0; i < launches; ++i)
        best_s = std::min(best_s, b_.run(*m, entry == "read" ? g_read : g, args));
      return arrays * static_cast<double>(bytes) * r / best_s;
    };
    const Arg read_args[] = {Arg::buf(*a), Arg::buf(*out), Arg::i(ni), Arg::i(r)};
    const Arg write_args[] = {Arg::buf(*a), Arg::i(ni), Arg::f(2.0f), Arg::i(r)};
    const Arg copy_args[] = {Arg::buf(*a), Arg::buf(*x), Arg::i(ni), Arg::i(r)};
    const Arg triad_args[] = {Arg::buf(*a), Arg::buf(*x), Arg::buf(*y), Arg::i(ni), Arg::f(0.5f),
                              Arg::i(r)};
    bw.read = best("read", read_args, 1);
    bw.write = best("write", write_args, 1);
    bw.copy = best("copy", copy_args, 2);
    bw.triad = best("triad", triad_args, 3);
    if (cpu()) {  // streaming stores, as a kernel that streams its output uses (ceilings.cpp)
      bw.write = std::max(bw.write, best("write_nt", write_args, 1));
      bw.copy = std::max(bw.copy, best("copy_nt", copy_args, 2));
      bw.triad = std::max(bw.triad, best("triad_nt", triad_args, 3));
    }
    return bw;
  }

 private:
  int probe_workers() {
    Module* m = module("probe_workers");
    auto out = b_.alloc(4);
    const Arg args[] = {Arg::buf(*out)};
    (void)b_.run(*m, {{1, 1, 1}, {1, 1, 1}}, args);
    float w = 0;
    b_.read(*out, &w, 4);
    return std::max(1, static_cast<int>(w));
  }

  // Compiled once per Micro; and once per process for a backend that prepare_micro_benchmarks
  // pinned (the sandboxed worker's: the speed-of-light gate measures the roof again inside the
  // sandbox, where no compiler can run and no file can be opened). Only pinned backends share
  // the process-wide modules: another backend could later live at a freed one's address.
  Module* module(const std::string& entry) {
    std::map<std::string, std::shared_ptr<Module>>* modules = &modules_;
    std::unique_lock<std::mutex> lock;
    if (pinned_.count(&b_)) {
      lock = std::unique_lock(pinned_mutex_);
      modules = &pinned_modules_[&b_];
    }
    auto it = modules->find(entry);
    if (it != modules->end()) return it->second.get();
    std::shared_ptr<Module> m;
    try {
      m = b_.compile(source_, entry, {});
    } catch (const CompileError&) {
      // the device lacks this kind (e.g. no fp64): the figure stays 0
    }
    return ((*modules)[entry] = m).get();
  }

 public:
  static void pin(const Backend& b) {
    std::lock_guard lock(pinned_mutex_);
    pinned_.insert(&b);
  }
  void compile_all() {
    for (const char* e : {"probe_workers", "read", "write", "copy", "triad", "write_nt", "copy_nt", "triad_nt",
                          "peak_fp64", "peak_fp32", "peak_fp16", "peak_bf16", "peak_int8"})
      if (cpu() || std::string_view(e).find("_nt") == std::string_view::npos) (void)module(e);
  }

 private:

  void tell(const std::string& what) {
    if (progress_) progress_(what);
  }

  Backend& b_;
  const std::function<void(const std::string&)>& progress_;
  std::string source_;
  int workers_ = 1;
  std::map<std::string, std::shared_ptr<Module>> modules_;
  static inline std::mutex pinned_mutex_;
  static inline std::set<const Backend*> pinned_;
  static inline std::map<const Backend*, std::map<std::string, std::shared_ptr<Module>>> pinned_modules_;
};

Compute peaks(Micro& m, bool one) {
  Compute c;
  c.fp64 = m.peak("peak_fp64", one);
  c.fp32 = m.peak("peak_fp32", one);
  c.fp16 = m.peak("peak_fp16", one);
  c.bf16 = m.peak("peak_bf16", one);
  c.int8 = m.peak("peak_int8", one);
  return c;
}

// DRAM: each array at least 4x the last-level cache (STREAM's rule), 128 MiB at least.
std::int64_t dram_floats(std::int64_t llc_bytes) {
  return std::max<std::int64_t>(4 * llc_bytes, 128ll << 20) / 4;
}
// LLC (or the L2 caches of the threads together): three arrays filling half the cache.
std::int64_t llc_floats(std::int64_t llc_bytes) {
  return std::max<std::int64_t>(llc_bytes / 2 / 3 / 4 / 4096 * 4096, 4096);
}
// Sweeps per cpu launch over the LLC arrays: about 256 MiB moved, long enough to time.
int llc_reps(std::int64_t n) {
  return static_cast<int>(std::max<std::int64_t>(1, (256ll << 20) / (3 * 4 * n)));
}

std::int64_t device_llc_bytes(Backend& b) {
  // The cpu and a CPU OpenCL device share the host's last-level cache; a GPU's is unknown
  // here, so assume a large one (64 MiB) to keep the DRAM arrays beyond it.
  const std::int64_t host_llc = machine_info().llc_bytes;
  return b.lang() == Lang::cuda ? std::max<std::int64_t>(host_llc, 64ll << 20) : host_llc;
}

// The cpu backend's threads each sweep their own chunk (ceilings.cpp), so the L2 arrays fill
// half of every thread's L2; 0 where the threads' caches are not known to be private.
std::int64_t threads_l2_bytes(const Micro& m) {
  return m.cpu() ? machine_info().l2_bytes * m.workers() : 0;
}

}  // namespace

Ceilings measure_ceilings(Backend& b, const std::function<void(const std::string&)>& progress) {
  if (!b.can_run()) throw NotSupported("the " + b.name() + " backend cannot run here");
  const auto t0 = std::chrono::steady_clock::now();
  Ceilings c;
  c.fingerprint = ceilings_fingerprint(b);
  c.backend = b.name();
  c.device = b.device();
  c.llc_bytes = device_llc_bytes(b);
  Micro m(b, progress);
  c.workers = m.cpu() ? m.workers() : 0;
  c.all.compute = peaks(m, false);
  c.one.compute = peaks(m, true);
  const std::int64_t dram_n = dram_floats(c.llc_bytes), llc_n = llc_floats(c.llc_bytes);
  c.all.dram = m.stream(dram_n, 1, 10, false, "dram");
  c.one.dram = m.stream(dram_n, 1, 3, true, "dram");
  c.all.llc = m.stream(llc_n, llc_reps(llc_n), m.cpu() ? 20 : 50, false, "llc");
  c.one.llc = m.stream(llc_n, llc_reps(llc_n), 10, true, "llc");
  c.l2_bytes = threads_l2_bytes(m);
  if (c.l2_bytes > 0) {
    const std::int64_t all_n = llc_floats(c.l2_bytes), one_n = llc_floats(c.l2_bytes / m.workers());
    c.all.l2 = m.stream(all_n, llc_reps(all_n), 20, false, "l2");
    c.one.l2 = m.stream(one_n, llc_reps(one_n), 10, true, "l2");
  }
  c.measure_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

void prepare_micro_benchmarks(Backend& b) {
  if (!b.can_run()) return;
  const std::function<void(const std::string&)> quiet;
  Micro::pin(b);
  Micro(b, quiet).compile_all();
}

Bandwidth measure_bandwidth(Backend& b, MemoryLevel level, int launches) {
  if (!b.can_run()) throw NotSupported("the " + b.name() + " backend cannot run here");
  const std::function<void(const std::string&)> quiet;  // Micro keeps a reference to it
  Micro m(b, quiet);
  const std::int64_t cache = level == MemoryLevel::l2    ? threads_l2_bytes(m)
                             : level == MemoryLevel::llc ? device_llc_bytes(b)
                                                         : 0;
  if (cache > 0) return m.stream(llc_floats(cache), llc_reps(llc_floats(cache)), launches, false, level_name(level));
  return m.stream(dram_floats(device_llc_bytes(b)), 1, launches, false, "dram");
}

namespace {
const char* peak_entry(DType t) {
  switch (t) {
    case DType::fp64: return "peak_fp64";
    case DType::bf16: return "peak_bf16";
    case DType::int8: return "peak_int8";
    case DType::fp16: return "peak_fp16";
    default: return "peak_fp32";
  }
}

// The largest ratio of one figure between two measurements (1: the same, or unmeasured).
double spread(double a, double b) { return a > 0 && b > 0 ? std::max(a, b) / std::min(a, b) : 1; }
}  // namespace

RoofNow measure_roof_for(Backend& b, DType dtype, double bytes, bool hot, bool memory, bool compute,
                         int rounds) {
  if (!b.can_run()) throw NotSupported("the " + b.name() + " backend cannot run here");
  const std::function<void(const std::string&)> quiet;  // Micro keeps a reference to it
  Micro m(b, quiet);
  const std::int64_t llc = device_llc_bytes(b);
  // Hot data of the kernel's size: the triad's three arrays hold its bytes (the smaller
  // kernels' fewer arrays fit a level higher, if anything: a roof no lower). Cold runs and
  // data beyond the LLC stream from DRAM, as the kernel's did.
  const bool from_dram = !hot || (llc > 0 && bytes > static_cast<double>(llc));
  const std::int64_t n = from_dram ? dram_floats(llc)
                                   : std::max<std::int64_t>(static_cast<std::int64_t>(bytes / 12) / 4096 * 4096, 4096);
  RoofNow r;
  r.rounds = rounds;
  // fp16 and bf16 without their own path run at fp32's rate, as Ceilings::flops_for assumes.
  const auto peak_now = [&] {
    const double own = m.peak(peak_entry(dtype), false);
    return dtype == DType::fp16 || dtype == DType::bf16 || dtype == DType::int8
               ? std::max(own, m.peak("peak_fp32", false))
               : own;
  };
  for (int i = 0; i < rounds; ++i) {
    if (memory) {
      const Bandwidth now = m.stream(n, from_dram ? 1 : llc_reps(n), 5, false, "now");
      if (i > 0)
        for (auto [a, c] : {std::pair{r.bandwidth.read, now.read}, std::pair{r.bandwidth.write, now.write},
                            std::pair{r.bandwidth.copy, now.copy}, std::pair{r.bandwidth.triad, now.triad}})
          r.bandwidth_spread = std::max(r.bandwidth_spread, spread(a, c));
      r.bandwidth.keep_best(now);
    }
    if (compute) {
      const double now = peak_now();
      if (i > 0) r.peak_spread = std::max(r.peak_spread, spread(r.peak, now));
      r.peak = std::max(r.peak, now);
    }
  }
  return r;
}

}  // namespace kforge
