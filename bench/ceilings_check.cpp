// kforge's ceilings against independent figures, in one run (bench/run-all runs it):
//   - triad bandwidth (all threads, one thread) against a plain -O3 STREAM-style loop here;
//   - copy bandwidth (one thread) against numpy's copyto, when python3 with numpy is there
//     (bench/.venv/bin/python first: `python3 -m venv bench/.venv && bench/.venv/bin/pip
//     install numpy`);
//   - peak fp32 / fp64 FLOP/s against OpenBLAS's best sgemm / dgemm over several sizes, which
//     must not exceed the measured peak;
//   - repeatability: the library's cpu gemm benched twice, one after the other: the two medians
//     must agree within the reported spread (a rank test on the samples), and neither may
//     report a SOL fraction above 1.
// Each kforge figure is a ceiling: an independent program should reach it, not beat it by more
// than noise. The table says so per row.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
#include "kforge/subprocess.hpp"

namespace {

using namespace kforge;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// STREAM's triad a = b + s*c over double arrays of `n`, split among `threads` threads; the best
// of `reps` runs, in bytes per second (3 arrays).
double plain_triad(std::size_t n, int threads, int reps) {
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const std::size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        for (std::size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
      });
    for (auto& th : pool) th.join();
    best = std::min(best, seconds_since(t0));
  }
  if (a[n / 2] != 7.0) std::abort();  // the loop ran
  return 3.0 * sizeof(double) * n / best;
}

// numpy's copyto over float32 arrays of `bytes`, best of 10, in bytes per second (2 arrays);
// 0 when no python with numpy is found.
double numpy_copy(std::size_t bytes) {
  const std::string script =
      "import time, numpy as np\n"
      "n = " + std::to_string(bytes / 4) + "\n"
      "a = np.ones(n, dtype=np.float32); b = np.zeros(n, dtype=np.float32)\n"
      "best = 1e30\n"
      "for _ in range(10):\n"
      "    t0 = time.perf_counter(); np.copyto(b, a); best = min(best, time.perf_counter() - t0)\n"
      "print(2 * 4 * n / best)\n";
  for (const char* py : {"bench/.venv/bin/python", "python3"}) {
    try {
      const ProcessResult r = run_process({py, "-c", script}, {}, {.timeout_s = 120});
      if (r.ok()) return std::strtod(r.out.c_str(), nullptr);
    } catch (const std::exception&) {
    }
  }
  return 0;
}

// OpenBLAS's best GFLOP/s-equivalent over square sizes, best of 3 calls each, in FLOP/s.
template <class T>
double blas_best(const std::vector<int>& sizes) {
  double best = 0;
  for (int n : sizes) {
    std::vector<T> a(static_cast<std::size_t>(n) * n, T(1)), b(a.size(), T(0.5)), c(a.size(), T(0));
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = Clock::now();
      if constexpr (sizeof(T) == 4)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                    n, 0.0f, c.data(), n);
      else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(),
                    n, 0.0, c.data(), n);
      best = std::max(best, 2.0 * n * n * static_cast<double>(n) / seconds_since(t0));
    }
  }
  return best;
}

// The library's cpu gemm at 512³, verified and timed with the default stopping rule.
EvalResult bench_gemm(Backend& cpu) {
  const auto problem = find_problem("gemm");
  EvalRequest req;
  req.problem = problem->name();
  req.kernel = library_kernel(*problem, cpu.lang());
  req.sizes = problem->resolve_sizes({{"M", 512}, {"N", 512}, {"K", 512}});
  req.bench = true;
  return evaluate(req, cpu);
}

// Two benches of the same kernel in one run should agree: the spread each reports must cover
// the difference between them. Returns the number of failed checks.
int repeatability(Backend& cpu) {
  const EvalResult a = bench_gemm(cpu), b = bench_gemm(cpu);
  if (!a.passed() || !b.passed() || !a.timing || !b.timing) {
    fmt::print("repeatability: gemm 512³ did not pass ({})\n", a.passed() ? b.error : a.error);
    return 1;
  }
  const SampleComparison c = compare_samples(a.timing->samples, b.timing->samples);
  const double spread = std::max(a.timing->mad_s / a.timing->median_s, b.timing->mad_s / b.timing->median_s);
  const double sol = std::max(a.roofline->sol_fraction, b.roofline->sol_fraction);
  fmt::print("\nrepeatability, cpu gemm 512³ benched twice: medians {:.1f} and {:.1f} µs (MAD {:.1f}% / "
             "{:.1f}%), ratio {:.3f}, rank test p = {:.3f}: {}; SOL fractions {:.2f} / {:.2f}\n",
             a.timing->median_s * 1e6, b.timing->median_s * 1e6, 100 * a.timing->mad_s / a.timing->median_s,
             100 * b.timing->mad_s / b.timing->median_s, c.ratio, c.test.p_value, c.verdict(),
             a.roofline->sol_fraction, b.roofline->sol_fraction);
  // The medians must agree within three robust spreads (or 5%), whatever the rank test says: a
  // rank test on thousands of samples flags differences far smaller than anyone can trust.
  const bool agree = std::fabs(c.ratio - 1) <= std::max(0.05, 3 * 1.4826 * spread);
  fmt::print("  {}; {}\n", agree ? "ok: the medians agree within the spread" : "MEDIANS DISAGREE beyond the spread",
             sol <= 1.05 ? "ok: SOL fraction at most 1" : "SOL FRACTION ABOVE 1: a ceiling is too low");
  return (agree ? 0 : 1) + (sol <= 1.05 ? 0 : 1);
}

struct Row {
  std::string figure;
  double kforge, other;
  std::string other_name;
  bool other_must_not_exceed;  // a peak: the other program must stay below it (within noise)
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge ceilings against independent figures (STREAM loop, numpy, OpenBLAS)"};
  bool remeasure = false;
  app.add_flag("--remeasure", remeasure, "measure kforge's ceilings now instead of using the cache");
  CLI11_PARSE(app, argc, argv);

  auto cpu = make_backend("cpu");
  const Ceilings c = ceilings(*cpu, remeasure);
  const MachineInfo& m = machine_info();
  const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(4 * m.llc_bytes, 128 << 20)) / 8;
  const int threads = m.logical_cpus;
  openblas_set_num_threads(threads);

  std::vector<Row> rows;
  rows.push_back({"triad GB/s, all threads", c.all.dram.triad, plain_triad(n, threads, 10),
                  "plain -O3 loop", false});
  rows.push_back({"triad GB/s, one thread", c.one.dram.triad, plain_triad(n, 1, 5),
                  "plain -O3 loop", false});
  const double np = numpy_copy(n * 8);
  if (np > 0) rows.push_back({"copy GB/s, one thread", c.one.dram.copy, np, "numpy copyto", false});
  const std::vector<int> sizes = {512, 1024, 2048, 3072};
  rows.push_back({"fp32 GFLOP/s, all threads", c.all.compute.fp32, blas_best<float>(sizes),
                  "OpenBLAS sgemm best", true});
  rows.push_back({"fp64 GFLOP/s, all threads", c.all.compute.fp64, blas_best<double>(sizes),
                  "OpenBLAS dgemm best", true});

  fmt::print("kforge ceilings vs independent figures on {} ({} CPUs), one run\n", m.cpu_model, threads);
  fmt::print("{:<28} {:>10} {:>12}  {:<22} {:>7}  {}\n", "figure", "kforge", "independent", "by",
             "ratio", "verdict");
  int bad = 0;
  for (const auto& r : rows) {
    const double ratio = r.kforge > 0 ? r.other / r.kforge : 0;
    std::string verdict;
    if (r.other_must_not_exceed) {
      verdict = ratio <= 1.05 ? "ok: below the peak" : "PEAK TOO LOW: the ceiling is beaten";
      bad += ratio > 1.05 ? 1 : 0;
    } else {
      verdict = ratio <= 1.10 ? (ratio >= 0.8 ? "ok: agrees" : "ok: kforge higher")
                              : "kforge lower by > 10%";
    }
    fmt::print("{:<28} {:>10.1f} {:>12.1f}  {:<22} {:>7.2f}  {}\n", r.figure, r.kforge * 1e-9,
               r.other * 1e-9, r.other_name, ratio, verdict);
  }
  bad += repeatability(*cpu);
  if (np == 0) fmt::print("(numpy not found: pip install numpy into bench/.venv for the copy row)\n");
  fmt::print("Timings on a shared machine are noisy; rerun with --remeasure for fresh ceilings.\n");
  return bad ? 1 : 0;
}
