// kforge's scan kernels against the plain sequential loop (the practitioner's loop in float,
// compiled -O3 into kforge, sequences shared among all cores), on the CPU backend, at time 128,
// 1024, 16384 and batch 1, 64, 4096. For each shape: the fastest of a few parameter choices
// (vector widths; one block per sequence or chunks along time; each verified), then `--rounds`
// rounds in which kforge and the loop are timed in alternation (measure_pair). Per round the
// ratio is loop median / kforge median; the table shows the median over rounds and its spread (min..max), the
// speed-of-light fraction against the measured DRAM bandwidth, and the load average.
// CPU timings are CPU timings: the figures describe this machine.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"

namespace {

using namespace kforge;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

// Candidates: 8- and 16-wide vectors; with fewer blocks of sequences (LANES = 4 each) than
// threads, also one block per sequence (PAR 1) against chunks along time for every thread.
std::vector<ParamValues> candidates(std::int64_t batch, int threads) {
  if (batch >= 4 * threads) return {{{"VEC", 8}}, {{"VEC", 16}}};
  std::vector<ParamValues> c;
  for (const std::int64_t vec : {8, 16})
    for (const std::int64_t par : {1, threads}) c.push_back({{"VEC", vec}, {"PAR", par}});
  return c;
}

struct Row {
  std::string problem;
  std::int64_t batch, time;
  std::string params, load;
  std::vector<double> ratios, kforge_s, loop_s, sol;
};

Row run_shape(Backend& backend, const std::string& name, std::int64_t batch, std::int64_t time,
              int rounds, int threads) {
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
  Row row{name, batch, time, "", load_average(), {}, {}, {}, {}};
  for (const auto& [k, v] : base.params) row.params += fmt::format("{}{}={}", row.params.empty() ? "" : ",", k, v);
  base.baseline = true;
  for (int r = 0; r < rounds; ++r) {
    const EvalResult e = evaluate(base, backend);
    if (!e.passed() || !e.timing || !e.baseline) throw std::runtime_error("round failed: " + e.error);
    row.ratios.push_back(e.speedup());
    row.kforge_s.push_back(e.timing->median_s);
    row.loop_s.push_back(e.baseline->median_s);
    row.sol.push_back(e.roofline ? e.roofline->sol_fraction : 0);
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
  app.add_option("--problems", problems)->delimiter(',')->capture_default_str();
  app.add_option("--batch", batches)->delimiter(',')->capture_default_str();
  app.add_option("--time", times)->delimiter(',')->capture_default_str();
  app.add_option("--max-elements", max_elements, "skip shapes with more batch*time")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved kforge/loop rounds per shape")->capture_default_str();
  app.add_option("--threads", threads, "threads for both (0: all cores)")->capture_default_str();
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
        rows.push_back(run_shape(*backend, p, b, t, rounds, threads));
      }

  fmt::print("{:<22} {:>5} {:>6} {:>11} {:>11} {:>7} {:>12} {:>5} {:>5}  {}\n", "problem", "batch",
             "time", "kforge ms", "loop ms", "ratio", "min..max", "SOL", "load", "parameters");
  for (const auto& r : rows) {
    const auto [lo, hi] = std::minmax_element(r.ratios.begin(), r.ratios.end());
    fmt::print("{:<22} {:>5} {:>6} {:>11.4f} {:>11.4f} {:>6.2f}x {:>5.2f}..{:<5.2f} {:>5.2f} {:>5}  {}\n",
               r.problem, r.batch, r.time, median(r.kforge_s) * 1e3, median(r.loop_s) * 1e3,
               median(r.ratios), *lo, *hi, median(r.sol), r.load, r.params);
  }
  fmt::print("({} rounds each; ratio = loop median time / kforge median time, per round; SOL = "
             "fraction of the measured bandwidth roof; load = 1-minute load average)\n", rounds);
  return 0;
}
