// kforge's tuned GEMM against OpenBLAS sgemm, on the CPU backend (and PoCL's OpenCL device when
// it is there), at several shapes. For each shape: a short tuning, then `--rounds` rounds in
// which the winner and OpenBLAS are timed in alternation (measure_pair). The ratio of each round
// is OpenBLAS's median over kforge's; the table shows the median ratio over rounds and its
// spread (min..max), so a noisy neighbour shows up as spread, not as a wrong answer.
// CPU timings are CPU timings: the figures describe this machine, not a GPU.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/tune.hpp"
#include "kforge/util.hpp"

namespace {

using namespace kforge;

struct Row {
  std::string backend, shape, params;
  std::vector<double> ratios, kforge_gflops, blas_gflops;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Sizes parse_shape(const std::string& s) {  // "1024" or "1000x1000x999"
  std::vector<std::int64_t> d;
  for (const auto& part : split(s, 'x')) d.push_back(std::stoll(part));
  if (d.size() == 1) d = {d[0], d[0], d[0]};
  if (d.size() != 3) throw UsageError("shape '" + s + "': use N or MxNxK");
  return {{"M", d[0]}, {"N", d[1]}, {"K", d[2]}};
}

Row run_shape(Backend& backend, const std::string& shape, int budget, int rounds, int threads) {
  const auto problem = find_problem("gemm");
  EvalRequest base;
  base.problem = "gemm";
  base.kernel = library_kernel(*problem, backend.lang());
  base.sizes = parse_shape(shape);
  base.backend = backend.name();
  base.backend_options.threads = threads;
  base.verify.trials = 1;
  base.measure.max_time_s = 2.0;
  const TuneResult t = tune(base, backend, {"random", budget, 1});
  if (t.best < 0) throw std::runtime_error("no configuration of " + base.kernel.name + " passed at " + shape);

  Row row{backend.name(), shape, "", {}, {}, {}};
  EvalRequest req = base;
  req.params = t.evaluations[t.best].params;
  for (const auto& [k, v] : req.params) row.params += fmt::format("{}{}={}", row.params.empty() ? "" : ",", k, v);
  req.bench = req.baseline = true;
  const double flops = problem->flops(req.sizes);
  for (int r = 0; r < rounds; ++r) {
    const EvalResult e = evaluate(req, backend);
    if (!e.passed() || !e.timing || !e.baseline) throw std::runtime_error("round failed: " + e.error);
    row.ratios.push_back(e.speedup());
    row.kforge_gflops.push_back(flops / e.timing->median_s * 1e-9);
    row.blas_gflops.push_back(flops / e.baseline->median_s * 1e-9);
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge GEMM vs OpenBLAS sgemm (fp32, row-major), CPU timings"};
  std::vector<std::string> shapes{"256", "1024", "2048", "1000x1000x999"};
  std::vector<std::string> backends{"cpu", "opencl"};
  int budget = 12, rounds = 5, threads = 0;
  app.add_option("--shapes", shapes, "N for N^3, or MxNxK")->capture_default_str();
  app.add_option("--backends", backends, "backends to run (skipped when absent)")->capture_default_str();
  app.add_option("--budget", budget, "tuning evaluations per shape and backend")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved kforge/OpenBLAS rounds per shape")->capture_default_str();
  app.add_option("--threads", threads, "threads for both (0: all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  for (const auto& name : backends) {
    std::unique_ptr<Backend> backend;
    try {
      backend = make_backend(name, {.threads = threads});
    } catch (const std::exception& e) {
      fmt::print(stderr, "skipping {}: {}\n", name, e.what());
      continue;
    }
    if (!backend->can_run()) { fmt::print(stderr, "skipping {}: cannot run here\n", name); continue; }
    fmt::print(stderr, "{}: {}\n", name, backend->device());
    for (const auto& shape : shapes) {
      fmt::print(stderr, "  {} ...\n", shape);
      rows.push_back(run_shape(*backend, shape, budget, rounds, threads));
    }
  }

  fmt::print("{:<7} {:<14} {:>14} {:>14} {:>8} {:>13}  {}\n", "backend", "M x N x K", "kforge GFLOP/s",
             "OpenBLAS GF/s", "ratio", "ratio min..max", "tuned parameters");
  for (const auto& r : rows) {
    const auto [lo, hi] = std::minmax_element(r.ratios.begin(), r.ratios.end());
    fmt::print("{:<7} {:<14} {:>14.1f} {:>14.1f} {:>7.2f}x {:>6.2f}..{:<5.2f}  {}\n", r.backend, r.shape,
               median(r.kforge_gflops), median(r.blas_gflops), median(r.ratios), *lo, *hi, r.params);
  }
  fmt::print("({} rounds each; ratio = OpenBLAS median time / kforge median time, per round)\n", rounds);
  return 0;
}
