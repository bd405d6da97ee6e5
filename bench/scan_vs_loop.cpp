// kforge's scan kernels against the plain sequential loop (the practitioner's loop in float,
// compiled -O3 into kforge, sequences shared among all cores), on the CPU backend, at time 128,
// 1024, 16384 and batch 1, 64, 4096. For each shape: the fastest of a few parameter choices
// (vector widths; one block per sequence or chunks along time; each verified), then `--rounds`
// rounds in which kforge and the loop are timed in alternation (measure_pair). Per round the
// ratio is loop median / kforge median; the table shows the median over rounds and its spread (min..max), the
// speed-of-light fraction against the measured DRAM bandwidth, and the load average.
// With --streams, each round also times a copy loop with the problem's traffic pattern (its
// (batch, time) inputs read, the output written with streaming stores, in blocks of `--lanes`
// whole sequences handed out to the threads, forward or backward as the scan walks): the
// bandwidth that pattern reaches here, a roof for the problem tighter than the DRAM triad's.
// CPU timings are CPU timings: the figures describe this machine.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/measure.hpp"
#include "bench_host.hpp"

namespace {

using namespace kforge;

// Candidates: with many sequences, 16-wide vectors in blocks of 32 or 128 sequences, with and
// without software prefetch, and 8-wide ones; with few (fewer than 4 per thread), 8- and 16-wide
// vectors, one block per sequence (PAR 1) against chunks along time for every thread.
std::vector<ParamValues> candidates(std::int64_t batch, int threads) {
  if (batch >= 4 * threads)
    return {{{"VEC", 16}, {"LANES", 32}},
            {{"VEC", 16}, {"LANES", 128}},
            {{"VEC", 16}, {"LANES", 32}, {"PF", 256}},
            {{"VEC", 8}, {"LANES", 32}}};
  std::vector<ParamValues> c;
  for (const std::int64_t vec : {8, 16})
    for (const std::int64_t par : {1, threads}) c.push_back({{"VEC", vec}, {"PAR", par}});
  return c;
}

struct Row {
  std::string problem;
  std::int64_t batch, time;
  std::string params, load;
  std::vector<double> ratios, kforge_s, loop_s, sol, sol_now, streams_gbs, kforge_gbs;
};

// The streams loop: `reads` input arrays and one output of batch*time floats; blocks of `lanes`
// sequences (one contiguous range of every array) handed out by an atomic counter to `threads`
// threads, each walked forward or backward 16 floats at a time; out = the sum of the inputs,
// stored with streaming stores (SSE: every x86-64 has them). Returns the median of `reps`
// timings (kforge's time is a median too: a best-of would flatter the loop on a busy machine).
class Streams {
 public:
  Streams(int reads, std::int64_t batch, std::int64_t time, int lanes, bool backward, int threads)
      : n_(batch * time), time_(time), lanes_(lanes), threads_(threads), backward_(backward),
        in_(reads), out_(alloc(n_)) {
    for (auto& a : in_) {
      a = alloc(n_);
      for (std::int64_t i = 0; i < n_; ++i) a.get()[i] = static_cast<float>(i % 7);
    }
    std::fill(out_.get(), out_.get() + n_, 0.0f);
  }
  double bytes() const { return 4.0 * n_ * (in_.size() + 1); }
  double median_seconds(int reps) {
    std::vector<double> s;
    for (int r = 0; r < reps; ++r) {
      std::atomic<std::int64_t> next{0};
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (int w = 1; w < threads_; ++w) pool.emplace_back([&] { work(next); });
      work(next);
      for (auto& t : pool) t.join();
      s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return median_of(s);
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  using Array = std::unique_ptr<float, Free>;
  static Array alloc(std::int64_t n) {
    return Array(static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64)));
  }
  void work(std::atomic<std::int64_t>& next) const {
    const std::int64_t per = lanes_ * time_, blocks = (n_ + per - 1) / per;
    for (std::int64_t b = next++; b < blocks; b = next++) {
      const std::int64_t lo = b * per, hi = std::min(n_, lo + per), vec_hi = lo + (hi - lo) / 16 * 16;
      auto line = [&](std::int64_t i) {
        for (int j = 0; j < 16; j += 4) {
          __m128 s = _mm_load_ps(in_[0].get() + i + j);
          for (std::size_t k = 1; k < in_.size(); ++k) s = _mm_add_ps(s, _mm_load_ps(in_[k].get() + i + j));
          _mm_stream_ps(out_.get() + i + j, s);
        }
      };
      if (backward_)
        for (std::int64_t i = vec_hi - 16; i >= lo; i -= 16) line(i);
      else
        for (std::int64_t i = lo; i < vec_hi; i += 16) line(i);
      for (std::int64_t i = vec_hi; i < hi; ++i) {
        float s = 0;
        for (const auto& a : in_) s += a.get()[i];
        out_.get()[i] = s;
      }
    }
    _mm_sfence();
  }
  std::int64_t n_, time_, lanes_;
  int threads_;
  bool backward_;
  std::vector<Array> in_;
  Array out_;
};

Row run_shape(Backend& backend, const std::string& name, std::int64_t batch, std::int64_t time,
              int rounds, int threads, bool streams, bool roof_now) {
  const auto problem = find_problem(name);
  EvalRequest base;
  base.problem = name;
  base.kernel = library_kernel(*problem, Lang::cpp);
  base.sizes = problem->resolve_sizes({{"batch", batch}, {"time", time}});
  base.backend = backend.name();
  base.backend_options.threads = threads;
  base.verify.trials = 1;
  base.verify.thorough = false;
  base.bench = true;
  base.measure.max_time_s = 1.0;
  base.measure.min_time_s = 0.2;
  double best = 1e300;
  std::vector<ParamValues> tried;
  for (auto p : candidates(batch, threads == 0 ? 2 : threads)) {
    std::erase_if(p, [&](const auto& kv) {  // scan.nstep has CHUNK only
      return std::none_of(base.kernel.params.begin(), base.kernel.params.end(),
                          [&](const Param& q) { return q.name == kv.first; });
    });
    if (std::find(tried.begin(), tried.end(), p) != tried.end()) continue;
    tried.push_back(p);
    EvalRequest req = base;
    req.params = p;
    const EvalResult e = evaluate(req, backend);
    if (e.passed() && e.timing && e.timing->median_s < best) best = e.timing->median_s, base.params = p;
  }
  if (best == 1e300) throw std::runtime_error("no configuration of " + name + " passed");
  Row row{name, batch, time, "", bench::load_average(), {}, {}, {}, {}, {}};
  for (const auto& [k, v] : base.params) row.params += fmt::format("{}{}={}", row.params.empty() ? "" : ",", k, v);
  // The streams loop: the problem's (batch, time) tensors but the output read, the output
  // written; the scan's direction (scan.linear and the n-step window walk forward) and the
  // kernel's blocks of LANES sequences.
  std::unique_ptr<Streams> pattern;
  if (streams) {
    int reads = -1;
    for (std::size_t t = 0; t < problem->tensors().size(); ++t)
      reads += problem->tensor_elements(t, base.sizes) == batch * time;
    const std::int64_t lanes = base.kernel.resolve(base.params).at("LANES");
    const bool forward = name == "scan.linear" || name == "scan.nstep";
    pattern = std::make_unique<Streams>(reads, batch, time, static_cast<int>(lanes), !forward,
                                        threads == 0 ? static_cast<int>(std::thread::hardware_concurrency()) : threads);
  }
  base.baseline = true;
  base.measure.roof_now = roof_now;
  for (int r = 0; r < rounds; ++r) {
    if (pattern) row.streams_gbs.push_back(pattern->bytes() / pattern->median_seconds(7) * 1e-9);
    const EvalResult e = evaluate(base, backend);
    if (!e.passed() || !e.timing || !e.baseline) throw std::runtime_error("round failed: " + e.error);
    row.ratios.push_back(e.speedup());
    row.kforge_s.push_back(e.timing->median_s);
    row.loop_s.push_back(e.baseline->median_s);
    row.sol.push_back(e.roofline ? e.roofline->sol_fraction : 0);
    if (e.roofline_now) row.sol_now.push_back(e.roofline_now->sol_fraction);
    row.kforge_gbs.push_back(problem->bytes(base.sizes, DType::fp32) / e.timing->median_s * 1e-9);
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge scan kernels vs the plain sequential loop (-O3), CPU timings"};
  std::vector<std::string> problems{"scan.linear", "scan.linear_rev", "scan.discounted_return",
                                    "scan.gae", "scan.td_lambda", "scan.vtrace", "scan.retrace",
                                    "scan.tree_backup", "scan.nstep"};
  std::vector<std::int64_t> batches{1, 64, 4096}, times{128, 1024, 16384};
  std::int64_t max_elements = 1 << 24;
  int rounds = 3, threads = 0;
  bool streams = false, roof_now = false;
  app.add_option("--problems", problems)->delimiter(',')->capture_default_str();
  app.add_option("--batch", batches)->delimiter(',')->capture_default_str();
  app.add_option("--time", times)->delimiter(',')->capture_default_str();
  app.add_option("--max-elements", max_elements, "skip shapes with more batch*time")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved kforge/loop rounds per shape")->capture_default_str();
  app.add_option("--threads", threads, "threads for both (0: all cores)")->capture_default_str();
  app.add_flag("--streams", streams, "also time a copy loop with each problem's traffic pattern");
  app.add_flag("--roof-now", roof_now,
               "also the SOL against the memory roof measured around each kforge run (kforge bench --roof-now)");
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  fmt::print(stderr, "cpu: {}\n", backend->device());
  std::vector<Row> rows;
  for (const auto& p : problems)
    for (const auto b : batches)
      for (const auto t : times) {
        if (b * t > max_elements) {
          fmt::print(stderr, "  {} batch={} time={}: skipped (over --max-elements)\n", p, b, t);
          continue;
        }
        fmt::print(stderr, "  {} batch={} time={} ...\n", p, b, t);
        rows.push_back(run_shape(*backend, p, b, t, rounds, threads, streams, roof_now));
      }

  fmt::print("{:<22} {:>5} {:>6} {:>11} {:>11} {:>7} {:>12} {:>5}{} {:>5}  {}{}\n", "problem", "batch",
             "time", "kforge ms", "loop ms", "ratio", "min..max", "SOL", roof_now ? "   now" : "", "load", "parameters",
             streams ? "  | kforge GB/s, streams GB/s, kforge/streams" : "");
  for (const auto& r : rows) {
    const auto [lo, hi] = std::minmax_element(r.ratios.begin(), r.ratios.end());
    fmt::print("{:<22} {:>5} {:>6} {:>11.4f} {:>11.4f} {:>6.2f}x {:>5.2f}..{:<5.2f} {:>5.2f}{} {:>5}  {}\n",
               r.problem, r.batch, r.time, median_of(r.kforge_s) * 1e3, median_of(r.loop_s) * 1e3,
               median_of(r.ratios), *lo, *hi, median_of(r.sol),
               r.sol_now.empty() ? "" : fmt::format(" {:>5.2f}", median_of(r.sol_now)), r.load, r.params);
    if (streams)
      fmt::print("    {:>6.1f} {:>6.1f} {:>5.2f}\n", median_of(r.kforge_gbs), median_of(r.streams_gbs),
                 median_of(r.kforge_gbs) / median_of(r.streams_gbs));
  }
  fmt::print("({} rounds each; ratio = loop median time / kforge median time, per round; SOL = "
             "fraction of the measured bandwidth roof (cached: the best ever measured); now = against the roof "
             "measured around each run (--roof-now); load = 1-minute load average)\n", rounds);
  return 0;
}
