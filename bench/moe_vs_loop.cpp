// kforge's moe_grouped_gemm (one launch: dispatch, grouped GEMM, combine) against the loop a
// user writes: per expert a gather, one OpenBLAS sgemm and a gate-weighted scatter (the
// problem's baseline), on the CPU backend with all cores for both. Shapes: T tokens, hidden H,
// expert width F, E = 64 and 8 experts, top-2, skewed (Zipf-like, one expert empty) and balanced
// routing. Each shape is first verified (quick protocol, one balanced and one skewed trial, at
// the shape itself); then `--rounds` rounds, each timing kforge and the loop in alternation on
// the same inputs (measure_pair). Ratio per round = loop median / kforge median; the table shows
// the median over rounds, its spread (min..max) and the 1-minute load average.
// CPU timings are CPU timings: the figures describe this machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/measure.hpp"
#include "kforge/problem.hpp"

namespace {

using namespace kforge;

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

struct Row {
  std::int64_t E;
  bool skewed;
  std::vector<double> ratios, kforge_s, loop_s;
  std::string load;
};

// Trial 1 is the skewed routing, trial 0 the balanced one (see kernels/moe/problem.cpp).
Row run_shape(Backend& backend, const Problem& p, const KernelSpec& spec, const ParamValues& params,
              const Sizes& sizes, bool skewed, int rounds, int threads, double seconds) {
  const Instance inst = p.make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, skewed ? 1 : 0);
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Arg> args;
  for (const auto& t : inst.tensors) {
    std::vector<float> f(t.begin(), t.end());
    bufs.push_back(backend.alloc(f.size() * sizeof(float)));
    backend.write(*bufs.back(), f.data(), f.size() * sizeof(float));
    args.push_back(Arg::buf(*bufs.back()));
  }
  for (const auto& n : p.size_names()) args.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(n))));
  Defines defines;
  for (const auto& [k, v] : params) defines.emplace_back(k, std::to_string(v));
  defines.emplace_back("KF_DTYPE_FP32", "1");
  auto module = backend.compile(spec.source, spec.entry, defines);
  const LaunchGeometry geometry = spec.geometry(params, sizes);
  const auto kernel_once = [&] { return backend.run(*module, geometry, args); };
  const auto base = p.baseline(inst, threads);
  const auto base_once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    base();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  MeasureOptions o;
  o.min_repetitions = 3;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;
  Row row{sizes.at("E"), skewed, {}, {}, {}, load_average()};
  for (int r = 0; r < rounds; ++r) {
    const PairTiming pt = measure_pair(kernel_once, base_once, o);
    row.kforge_s.push_back(pt.a.median_s);
    row.loop_s.push_back(pt.b.median_s);
    row.ratios.push_back(pt.b.median_s / pt.a.median_s);
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge moe_grouped_gemm vs a per-expert OpenBLAS loop, CPU timings"};
  std::int64_t T = 4096, H = 1024, F = 512, K = 2;
  std::vector<std::int64_t> experts{64, 8};
  int rounds = 3, threads = 0;
  double seconds = 2.0;
  bool verify = true;
  std::vector<std::string> param_text;
  app.add_option("--tokens", T)->capture_default_str();
  app.add_option("--hidden", H)->capture_default_str();
  app.add_option("--width", F, "expert width F")->capture_default_str();
  app.add_option("--experts", experts)->delimiter(',')->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved kforge/loop rounds per shape")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per round")->capture_default_str();
  app.add_option("--threads", threads, "threads for both (0: all cores)")->capture_default_str();
  app.add_option("--param", param_text, "NAME=VALUE overrides of the cpu kernel's defaults");
  app.add_flag("!--no-verify", verify, "skip the verification at each shape");
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  const auto problem = find_problem("moe_grouped_gemm");
  const KernelSpec spec = library_kernel(*problem, Lang::cpp);
  ParamValues overrides;
  for (const auto& s : param_text) overrides[s.substr(0, s.find('='))] = std::stoll(s.substr(s.find('=') + 1));
  const ParamValues params = spec.resolve(overrides);
  std::string ptext;
  for (const auto& [k, v] : params) ptext += fmt::format("{}{}={}", ptext.empty() ? "" : ",", k, v);
  fmt::print(stderr, "cpu: {}\nkernel parameters: {}\n", backend->device(), ptext);

  std::vector<Row> rows;
  for (const auto E : experts) {
    const Sizes sizes = problem->resolve_sizes({{"T", T}, {"H", H}, {"F", F}, {"E", E}, {"K", K}});
    problem->check_sizes(sizes);
    if (verify) {  // trial 0 balanced, trial 1 skewed, at this very shape
      EvalRequest req;
      req.problem = problem->name();
      req.kernel = spec;
      req.sizes = sizes;
      req.params = overrides;
      req.backend = "cpu";
      req.backend_options.threads = threads;
      req.verify.thorough = false;
      req.verify.trials = 2;
      fmt::print(stderr, "  E={}: verifying ...\n", E);
      const EvalResult e = evaluate(req, *backend);
      if (!e.passed()) {
        fmt::print(stderr, "verification failed at E={}: {}\n", E, e.error);
        return 1;
      }
    }
    for (const bool skewed : {true, false}) {
      fmt::print(stderr, "  E={} {} ...\n", E, skewed ? "skewed" : "balanced");
      rows.push_back(run_shape(*backend, *problem, spec, params, sizes, skewed, rounds, threads, seconds));
    }
  }

  const double flops = problem->flops(problem->resolve_sizes({{"T", T}, {"H", H}, {"F", F}, {"K", K}}));
  const Ceilings roofs = ceilings(*backend);
  fmt::print("moe_grouped_gemm T={} H={} F={} K={} ({:.2f} GFLOP per call), CPU timings\n", T, H, F, K, flops / 1e9);
  fmt::print("{:>4} {:>9} {:>10} {:>10} {:>8} {:>8} {:>7} {:>12} {:>5} {:>5}\n", "E", "routing", "kforge ms",
             "loop ms", "kf GF/s", "lp GF/s", "ratio", "min..max", "SOL%", "load");
  for (const auto& r : rows) {
    const auto [lo, hi] = std::minmax_element(r.ratios.begin(), r.ratios.end());
    const double k = median_of(r.kforge_s), l = median_of(r.loop_s);
    const double bytes = problem->bytes(problem->resolve_sizes({{"T", T}, {"H", H}, {"F", F}, {"E", r.E}, {"K", K}}),
                                        DType::fp32);
    const double sol = roofline(roofs, DType::fp32, flops, bytes, k, 0, /*hot=*/true).sol_fraction;
    fmt::print("{:>4} {:>9} {:>10.2f} {:>10.2f} {:>8.1f} {:>8.1f} {:>6.2f}x {:>5.2f}..{:<5.2f} {:>5.1f} {:>5}\n", r.E,
               r.skewed ? "skewed" : "balanced", k * 1e3, l * 1e3, flops / k / 1e9, flops / l / 1e9,
               median_of(r.ratios), *lo, *hi, 100 * sol, r.load);
  }
  fmt::print("({} rounds each; ratio = loop median / kforge median per round; load = 1-minute load average; "
             "kernel parameters {})\n", rounds, ptext);
  return 0;
}
