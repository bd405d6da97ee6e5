// kforge's fused cartpole kernel (one launch runs all K steps) against its two peers, on the
// CPU backend, in one run: the plain per-environment loop a CPU gym runs (the scalar step in
// float, -O3, environments shared among all cores: the problem's baseline), and the unfused
// mode (one launch per step). The unfused mode is the same kernel at steps = 1, launched K
// times: its time is K times the median one-step launch (the state passes from one launch to
// the next through obs, a pointer hand-off that is not timed). Every timed run is verified.
// Per round, fused, loop and one-step launch are timed in turn (interleaved); the table shows
// environment-steps per second (median over rounds), the ratios per round (median, min..max)
// and the load average. CPU timings are CPU timings: the figures describe this machine.
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
#include "kforge/measure.hpp"
#include "bench_host.hpp"

namespace {

using namespace kforge;

struct Row {
  std::int64_t envs, steps;
  std::string load;
  std::vector<double> fused_s, loop_s, unfused_s;  // time for all K steps
};

EvalRequest request(Backend& backend, std::int64_t envs, std::int64_t steps, int threads, const ParamValues& p) {
  const auto problem = find_problem("cartpole");
  EvalRequest r;
  r.problem = "cartpole";
  r.kernel = library_kernel(*problem, Lang::cpp);
  r.sizes = problem->resolve_sizes({{"envs", envs}, {"steps", steps}});
  r.backend = backend.name();
  r.backend_options.threads = threads;
  r.params = p;
  r.verify.trials = 1;
  r.verify.thorough = false;
  r.bench = true;
  r.measure.max_time_s = 1.0;
  r.measure.min_time_s = 0.2;
  return r;
}

double timed(Backend& backend, const EvalRequest& r, double* baseline_s) {
  const EvalResult e = evaluate(r, backend);
  if (!e.passed() || !e.timing) throw std::runtime_error("cartpole run failed: " + e.error);
  if (baseline_s) {
    if (!e.baseline) throw std::runtime_error("no baseline timing");
    *baseline_s = e.baseline->median_s;
  }
  return e.timing->median_s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge cartpole: fused kernel vs per-env gym loop vs one launch per step, CPU timings"};
  std::vector<std::int64_t> envs{1, 1024, 131072}, steps{1, 10, 100};
  int rounds = 3, threads = 0, block = 256;
  app.add_option("--envs", envs)->delimiter(',')->capture_default_str();
  app.add_option("--steps", steps)->delimiter(',')->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds per shape")->capture_default_str();
  app.add_option("--threads", threads, "threads for all three (0: all cores)")->capture_default_str();
  app.add_option("--envs-per-block", block, "the kernel's ENVS parameter")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  fmt::print(stderr, "cpu: {}\n", backend->device());
  const ParamValues params{{"ENVS", block}};
  std::vector<Row> rows;
  for (const auto n : envs)
    for (const auto k : steps) {
      fmt::print(stderr, "  envs={} steps={} ...\n", n, k);
      EvalRequest fused = request(*backend, n, k, threads, params);
      fused.baseline = true;
      const EvalRequest one = request(*backend, n, 1, threads, params);
      Row row{n, k, bench::load_average(), {}, {}, {}};
      for (int r = 0; r < rounds; ++r) {
        double loop = 0;
        row.fused_s.push_back(timed(*backend, fused, &loop));
        row.loop_s.push_back(loop);
        row.unfused_s.push_back(static_cast<double>(k) * timed(*backend, one, nullptr));
      }
      rows.push_back(row);
    }

  auto rate = [](const Row& r, const std::vector<double>& t) {
    return static_cast<double>(r.envs * r.steps) / median_of(t);
  };
  auto ratios = [](const std::vector<double>& peer, const std::vector<double>& ours) {
    std::vector<double> q;
    for (std::size_t i = 0; i < ours.size(); ++i) q.push_back(peer[i] / ours[i]);
    const auto [lo, hi] = std::minmax_element(q.begin(), q.end());
    return fmt::format("{:6.2f}x {:>5.2f}..{:<5.2f}", median_of(q), *lo, *hi);
  };
  fmt::print("{:>7} {:>5} {:>12} {:>12} {:>12} {:>24} {:>24} {:>5}\n", "envs", "steps", "fused st/s",
             "loop st/s", "unfused st/s", "fused/loop (min..max)", "fused/unfused (min..max)", "load");
  for (const auto& r : rows)
    fmt::print("{:>7} {:>5} {:>12.3e} {:>12.3e} {:>12.3e} {:>24} {:>24} {:>5}\n", r.envs, r.steps,
               rate(r, r.fused_s), rate(r, r.loop_s), rate(r, r.unfused_s), ratios(r.loop_s, r.fused_s),
               ratios(r.unfused_s, r.fused_s), r.load);
  fmt::print("({} rounds each; st/s = environment-steps per second from the median time; ratio = "
             "peer time / fused time per round; load = 1-minute load average; ENVS={})\n",
             rounds, block);
  return 0;
}
