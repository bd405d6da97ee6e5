#pragma once
// Timing that experts trust: warm-up, then samples until a stopping criterion holds (nvbench's
// model: enough samples and time, then low noise, or noise that stopped improving, or a
// timeout); robust statistics with outliers reported, never dropped; a rank test that tells
// noise from change. Plus the machine's ceilings, the speed-of-light fraction and score.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kforge/dtype.hpp"

namespace kforge {

class Backend;

struct MeasureOptions {
  int warmup = 2;                   // untimed runs first (first touch, caches, clocks)
  int min_repetitions = 10;         // the noise criterion takes at least this many samples...
  int max_repetitions = 100000;
  double min_time_s = 0.5;          // ...over at least this long...
  double max_time_s = 5.0;          // ...and gives up here (the timeout)
  double target_rel_stdev = 0.005;  // stop once stdev / mean is below this
  int repetitions = 0;  // > 0: the fixed-count criterion, exactly this many samples
  bool cold = false;    // rotate among copies of the inputs so that every run starts cold
  bool roof_now = false;  // also measure the memory roof right before and after (measure_bandwidth)
};

// Summary of samples. Outliers (beyond median +- 3 robust sigmas, sigma = 1.4826 * MAD, at
// least 0.1% of the median) are counted, and stay in every figure.
struct Timing {
  std::vector<double> samples;  // seconds, in the order measured
  double median_s = 0, min_s = 0, max_s = 0, mean_s = 0, stdev_s = 0, mad_s = 0;
  int outliers = 0;
  bool noise_target_met = false;
  std::string stop_reason;  // which criterion ended the sampling, in words
  [[nodiscard]] int repetitions() const { return static_cast<int>(samples.size()); }
  [[nodiscard]] double rel_stdev() const { return mean_s > 0 ? stdev_s / mean_s : 0; }
  [[nodiscard]] nlohmann::json to_json() const;
};

// Summary statistics of samples (median of an even count: the mean of the middle two).
[[nodiscard]] Timing summarize(std::vector<double> samples);
[[nodiscard]] double median_of(std::vector<double> v);

// Decides, sample by sample, when a measurement has enough. One instance per timed thing.
class StoppingCriterion {
 public:
  virtual ~StoppingCriterion() = default;
  virtual void add(double sample_s) = 0;
  // Whether to stop now; `elapsed_s` is the wall time since sampling began.
  [[nodiscard]] virtual bool done(double elapsed_s) = 0;
  [[nodiscard]] virtual bool noise_target_met() const = 0;
  [[nodiscard]] virtual std::string reason() const = 0;  // why done() said stop
};

// nvbench's stdrel: at least min_repetitions and min_time_s; then stop when the relative
// stdev is under the target, or when it has stopped improving (it fell by less than 5% over
// the last 32 samples), or at max_time_s / max_repetitions.
[[nodiscard]] std::unique_ptr<StoppingCriterion> noise_criterion(const MeasureOptions& o);
// Exactly n samples, however long they take (for scripted runs).
[[nodiscard]] std::unique_ptr<StoppingCriterion> fixed_count_criterion(int n, double target);
// The criterion the options name: fixed-count when o.repetitions > 0, else noise.
[[nodiscard]] std::unique_ptr<StoppingCriterion> make_criterion(const MeasureOptions& o);

// `once` runs the thing once and returns its seconds on the backend's clock.
[[nodiscard]] Timing measure(const std::function<double()>& once, const MeasureOptions& o = {});

// Two things timed in alternation (a, b, a, b, ...) until both criteria hold, so a noisy
// neighbour slows both alike and their ratio stays honest.
struct PairTiming {
  Timing a, b;
};
[[nodiscard]] PairTiming measure_pair(const std::function<double()>& a,
                                      const std::function<double()>& b,
                                      const MeasureOptions& o = {});

// Cold runs: how many copies of a working set of `set_bytes` to rotate among so that their
// total exceeds 4x a cache of `cache_bytes` (at least 2).
[[nodiscard]] int cold_copies(double set_bytes, double cache_bytes);
// A function that calls fns[0], fns[1], ... in turn, one per call.
[[nodiscard]] std::function<void()> rotation(std::vector<std::function<void()>> fns);

// Mann-Whitney U (Wilcoxon rank-sum), two-sided, normal approximation with tie and continuity
// corrections (as scipy's mannwhitneyu with method="asymptotic").
struct RankTest {
  double u = 0;        // U of the first sample
  double z = 0;
  double p_value = 1;
  std::size_t n_a = 0, n_b = 0;
};
[[nodiscard]] RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b);

// Whether b differs from a beyond noise: p < alpha. ratio = median(b) / median(a).
struct SampleComparison {
  RankTest test;
  double ratio = 0;
  bool differ = false;
  bool enough_samples = true;  // fewer than 9 each: the test has little power
  [[nodiscard]] std::string verdict() const;  // "faster", "slower", "same within noise"
};
[[nodiscard]] SampleComparison compare_samples(const std::vector<double>& a, const std::vector<double>& b,
                                         double alpha = 0.05);

// --- Ceilings ----------------------------------------------------------------------------

// Bytes per second moved by STREAM's kernels (read: sum, write: fill, copy, triad a=b+s*c;
// bytes counted as STREAM does: every array element read or written once).
struct Bandwidth {
  double read = 0, write = 0, copy = 0, triad = 0;
  [[nodiscard]] double best() const;
  // The fewest seconds `bytes` can take, `written` of them stores (the rest loads; < 0:
  // unknown): the best figure for all of them, and no faster than each direction alone
  // streams (on the 2-core EPYC loads alone stream slower than the triad moves bytes: a
  // reduction's roof is the read figure, not the triad's).
  [[nodiscard]] double seconds_for(double bytes, double written) const;
  void keep_best(const Bandwidth& other);  // figure by figure, the higher
  [[nodiscard]] nlohmann::json to_json() const;  // in GB/s
  static Bandwidth from_json(const nlohmann::json& j);
};
// Operations per second of independent dot-product / FMA chains at the widest SIMD
// (FMA and dot products count 2 per multiply-add; 0 where the device lacks the type).
struct Compute {
  double fp64 = 0, fp32 = 0, fp16 = 0, bf16 = 0, int8 = 0;
};
// Where a kernel's data streams from: memory, the last-level cache, or the threads' private
// L2 caches (hot data that fits in them; cpu backend only).
enum class MemoryLevel { dram, llc, l2 };
[[nodiscard]] const char* level_name(MemoryLevel l);  // "dram", "llc", "l2"

struct Roofs {
  Bandwidth dram;  // arrays >= 4x the last-level cache
  Bandwidth llc;   // arrays that fit in half the last-level cache
  Bandwidth l2;    // arrays that fit in half of each thread's L2 (cpu only; else zeros)
  Compute compute;
  [[nodiscard]] const Bandwidth& at(MemoryLevel l) const;
  [[nodiscard]] Bandwidth& at(MemoryLevel l);
};

// The machine's own speed limits, measured by kforge's micro-benchmarks on a backend's device.
struct Ceilings {
  std::string fingerprint;  // backend, device, CPU model, cores and flags the figures belong to
  std::string backend, device;
  std::int64_t llc_bytes = 0;  // the last-level cache the llc figures fit in
  std::int64_t l2_bytes = 0;   // the L2 caches of all threads together (cpu; 0: not measured)
  int workers = 0;             // the threads "all" ran on (0: not recorded, an older cache)
  Roofs all;  // all threads (every compute unit)
  Roofs one;  // one thread (one work-group / block)
  double measure_s = 0;  // how long measuring took
  // The roofs the speed of light uses: the best all-threads figures.
  [[nodiscard]] double bandwidth_bytes_s() const { return all.dram.best(); }
  [[nodiscard]] double llc_bandwidth_bytes_s() const { return all.llc.best(); }
  // The roof the speed of light of `bytes` uses: hot runs whose data fits in the threads'
  // L2 caches get the L2's, those that fit in the last-level cache the LLC's (each only where
  // measured and faster than the level below); cold runs and larger data DRAM's. Without the
  // L2 roof, a kernel on a few rows hot in a 2 MiB L2 would be "suspect" against the LLC's.
  [[nodiscard]] MemoryLevel memory_level(double bytes, bool hot) const;
  // Peak for a dtype: fp16/bf16 fall back to fp32 where the device has no faster path.
  [[nodiscard]] double flops_for(DType t) const;
  [[nodiscard]] nlohmann::json to_json() const;
  static Ceilings from_json(const nlohmann::json& j);
  // Keeps, figure by figure, the higher of this and `other` (same fingerprint). A
  // micro-benchmark only ever under-measures (a neighbour on the host, a slow moment), so
  // measurements merged this way converge up to the machine's limits.
  void keep_best(const Ceilings& other);
  // The same across cpu pools of other sizes on this host (`other` ran on other.workers
  // threads): one thread is one thread in any pool, and a pool of no more threads than this one
  // cannot be faster than this one's all threads. So a 1-thread pool measured while a neighbour
  // held the core (DRAM 6 GB/s, where the 2-thread pool's one-thread column read 24) is lifted.
  void keep_best_of_pool(const Ceilings& other);
  // Figures that contradict each other, in words: all threads no faster than one thread (a
  // neighbour on a core during the measurement), a cache level slower than the level below it.
  // Such a roof is under-measured; ceilings() measures again once before it keeps one.
  [[nodiscard]] std::vector<std::string> doubts() const;
  // Where `doubts` name a level's all-threads figures, what they cannot be above: one thread's
  // times the threads (an upper bound that a judge may use, never the speed of light reported).
  [[nodiscard]] Bandwidth upper_bound_at(MemoryLevel l) const;
};

// Cached per fingerprint under the cache folder. `remeasure` measures again and keeps, per
// figure, the best of the new and the cached measurement.
// `progress(what)` is told each figure as it starts, when measuring.
[[nodiscard]] Ceilings ceilings(Backend& b, bool remeasure = false,
                                const std::function<void(const std::string&)>& progress = {});
// Measures now, no cache.
[[nodiscard]] Ceilings measure_ceilings(Backend& b,
                                        const std::function<void(const std::string&)>& progress = {});
// The memory roof as it is now: STREAM's kernels on all threads, best of `launches` each, on
// arrays sized for `level` (beyond the last-level cache for DRAM); about 0.5 s on the cpu. A shared
// host's bandwidth swings 1.5x from one minute to the next (triad 40-68 GB/s on the 2-core
// EPYC): the cached ceilings keep the best minute ever seen, this is the minute a kernel ran in.
[[nodiscard]] Bandwidth measure_bandwidth(Backend& b, MemoryLevel level, int launches = 5);
// Compiles every micro-benchmark on `b` now and keeps the modules for the process's life, so
// that later measurements compile nothing (the sandboxed worker can run no compiler).
void prepare_micro_benchmarks(Backend& b);
// The roof a result beat, measured again now for its own data: STREAM's kernels on arrays that
// together hold `bytes` (hot: swept repeatedly, so they sit where the kernel's data sat; cold:
// DRAM's arrays), and the peak of `dtype`, each `rounds` times on all threads. The figures are
// the best round's; the spreads are the largest ratio of a figure between rounds (>= 1), so a
// judge can allow for how far the roof itself moves from one moment to the next.
struct RoofNow {
  Bandwidth bandwidth;  // zeros unless asked for
  double peak = 0;      // operations per second of dtype (0 unless asked for)
  double bandwidth_spread = 1, peak_spread = 1;
  int rounds = 0;
};
[[nodiscard]] RoofNow measure_roof_for(Backend& b, DType dtype, double bytes, bool hot,
                                       bool memory, bool compute, int rounds = 3);
// The file the ceilings of `b` are cached in (under the cache folder, $KFORGE_CACHE_DIR).
[[nodiscard]] std::string ceilings_cache_path(Backend& b);
[[nodiscard]] std::string ceilings_fingerprint(Backend& b);

// The host: CPU model, logical CPUs, flags, caches, memory. Google Benchmark's "context".
struct MachineInfo {
  std::string cpu_model, host_name, os;
  int logical_cpus = 0;
  std::vector<std::string> flags;  // the SIMD-relevant subset of /proc/cpuinfo's flags
  std::string flags_hash;          // of all flags
  std::int64_t l1d_bytes = 0, l2_bytes = 0, llc_bytes = 0, memory_bytes = 0;
  [[nodiscard]] nlohmann::json to_json() const;
};
[[nodiscard]] const MachineInfo& machine_info();

// --- Speed of light ----------------------------------------------------------------------

// T_sol = max(flops / peak_flops(dtype), bytes / peak_bw); sol_fraction = T_sol / seconds.
// Hot runs whose bytes fit in the last-level cache are held to the cache's bandwidth.
struct Roofline {
  double sol_fraction = 0;
  std::string bound;                // "compute" or "memory"
  double arithmetic_intensity = 0;  // FLOPs per byte
  double t_sol_s = 0;
  std::string memory_roof;          // "dram", "llc" or "l2", "-read" / "-write" where one direction limits
  std::optional<double> score;      // SOL-ExecBench's S, where there is a baseline
};
// `written`: how many of `bytes` the kernel stores (< 0: unknown, only the total counts).
[[nodiscard]] Roofline roofline(const Ceilings& c, DType t, double flops, double bytes,
                                double seconds, double baseline_seconds = 0, bool hot = false,
                                double written = -1);
// The same against the roof of a given level (the roof of the minute: measured at the level the
// cached ceilings chose, and held to it even where it came out below the level beneath).
[[nodiscard]] Roofline roofline_at(const Ceilings& c, MemoryLevel level, DType t, double flops,
                                   double bytes, double seconds, double baseline_seconds = 0,
                                   double written = -1);
// SOL-ExecBench: S = 1 / (1 + (T - T_sol) / (T_base - T_sol)); 0.5 at the baseline, 1 at the
// speed of light. Empty when T_base <= T_sol (a baseline at or beyond the roof: no scale).
[[nodiscard]] std::optional<double> sol_score(double t, double t_sol, double t_base);

// Suite figures. fast_p (KernelBench): the share of entries that are correct and at least p
// times faster than their baseline; entries without a baseline count as not fast.
struct SuiteEntry {
  bool correct = false;
  double speedup = 0;       // baseline / kernel; 0 without a baseline
  double sol_fraction = 0;  // 0 when not measured
};
[[nodiscard]] double fast_p(const std::vector<SuiteEntry>& entries, double p);
// Geometric mean SOL fraction over correct entries that have one; 0 when none.
[[nodiscard]] double geomean_sol(const std::vector<SuiteEntry>& entries);

}  // namespace kforge
