// Variants of the moe_grouped_gemm cpu kernel side by side: kernel sources (the library's, or a
// file: an older version from git, an experiment) each with its parameter overrides, timed in
// alternation on the same inputs, round by round, at the bench/moe_vs_loop shape (T = 4096,
// H = 1024, F = 512, K = 2; E and the routing per row). With --threads 1 the clock is the
// calling thread's CPU time (the launch runs on it), which a loaded host disturbs far less than
// wall time: use it for per-core comparisons; with more threads it is wall time. --gemm adds
// kforge's gemm at the same work (M = T*K, N = F, K = H) on the same clock: the per-core rate a
// packed dense GEMM reaches here, MoE's ceiling short of the FMA peak. Each variant's Y is
// compared with the first variant's (a mismatch is printed: verify with bench/moe_vs_loop).
//
//   build/bench/moe_variants --threads 1 library library:MR=4,NV=3,BN=192,MC=384 old.cpp:MR=4,NV=3,BN=192,MC=384
#include <time.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/measure.hpp"
#include "kforge/problem.hpp"
#include "bench_host.hpp"

namespace {

using namespace kforge;

struct Variant {
  std::string name;
  std::shared_ptr<Module> module;
  ParamValues params;
};

struct Inputs {
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Arg> args;
};

Inputs upload(Backend& backend, const Problem& p, const Sizes& sizes, int trial) {
  const Instance inst = p.make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, trial);
  Inputs in;
  for (const auto& t : inst.tensors) {
    std::vector<float> f(t.begin(), t.end());
    in.bufs.push_back(backend.alloc(f.size() * sizeof(float)));
    backend.write(*in.bufs.back(), f.data(), f.size() * sizeof(float));
    in.args.push_back(Arg::buf(*in.bufs.back()));
  }
  for (const auto& n : p.size_names()) in.args.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(n))));
  for (const auto& n : p.scalar_names()) in.args.push_back(Arg::f(n == "alpha" ? 1.0f : 0.0f));  // gemm: C = A*B
  return in;
}

std::shared_ptr<Module> compile(Backend& backend, const std::string& source, const KernelSpec& spec,
                                const ParamValues& params) {
  Defines d;
  for (const auto& [k, v] : params) d.emplace_back(k, std::to_string(v));
  d.emplace_back("KF_DTYPE_FP32", "1");
  return backend.compile(source, spec.entry, d);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"moe_grouped_gemm cpu kernel variants side by side (thread CPU time with --threads 1)"};
  std::int64_t T = 4096, H = 1024, F = 512, K = 2;
  std::vector<std::int64_t> experts{64, 8};
  int rounds = 4, reps = 2, threads = 1;
  bool gemm = false;
  std::vector<std::string> variants;
  app.add_option("--tokens", T)->capture_default_str();
  app.add_option("--hidden", H)->capture_default_str();
  app.add_option("--width", F, "expert width F")->capture_default_str();
  app.add_option("--experts", experts)->delimiter(',')->capture_default_str();
  app.add_option("--rounds", rounds, "rounds; each runs every variant --reps times")->capture_default_str();
  app.add_option("--reps", reps)->capture_default_str();
  app.add_option("--threads", threads, "cpu backend threads (1: thread CPU time; more: wall time)")->capture_default_str();
  app.add_flag("--gemm", gemm, "also time kforge's gemm at the same work (defaults)");
  app.add_option("variants", variants, "SOURCE[:NAME=VALUE,...], SOURCE = 'library' or a kernel file")->required();
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  const auto p = find_problem("moe_grouped_gemm");
  const KernelSpec spec = library_kernel(*p, Lang::cpp);
  const bool cpu_clock = threads == 1;
  std::vector<Variant> vs;
  for (const auto& v : variants) {
    const auto colon = v.find(':');
    const std::string file = v.substr(0, colon);
    ParamValues over;
    if (colon != std::string::npos) {
      std::stringstream ss(v.substr(colon + 1));
      for (std::string kv; std::getline(ss, kv, ',');) {
        if (kv.find('=') == std::string::npos) {
          fmt::print(stderr, "variant {}: '{}' is not NAME=VALUE\n", v, kv);
          return 2;
        }
        over[kv.substr(0, kv.find('='))] = std::stoll(kv.substr(kv.find('=') + 1));
      }
    }
    std::string source = spec.source;
    if (file != "library") {
      std::ifstream in(file);
      if (!in) {
        fmt::print(stderr, "variant {}: cannot read {} (give 'library' or a kernel source file)\n", v, file);
        return 2;
      }
      std::stringstream text;
      text << in.rdbuf();
      source = text.str();
    }
    const ParamValues params = spec.resolve(over);
    vs.push_back({v, compile(*backend, source, spec, params), params});
  }

  fmt::print("moe_grouped_gemm T={} H={} F={} K={}, {} thread(s), {}; {} rounds x {} reps, medians\n", T, H, F, K,
             threads, cpu_clock ? "thread CPU time" : "wall time", rounds, reps);
  for (const auto E : experts)
    for (const bool skewed : {true, false}) {
      const Sizes sizes = p->resolve_sizes({{"T", T}, {"H", H}, {"F", F}, {"E", E}, {"K", K}});
      p->check_sizes(sizes);
      Inputs in = upload(*backend, *p, sizes, skewed ? 1 : 0);  // trial 1 skewed, 0 balanced
      std::vector<std::vector<double>> t(vs.size());
      std::vector<float> first, y(static_cast<std::size_t>(T * F));
      for (int r = 0; r < rounds; ++r)
        for (std::size_t v = 0; v < vs.size(); ++v) {
          const LaunchGeometry g = spec.geometry(vs[v].params, sizes);
          for (int q = 0; q < reps; ++q) {
            const double t0 = bench::clock_s(cpu_clock);
            backend->run(*vs[v].module, g, in.args);
            t[v].push_back(bench::clock_s(cpu_clock) - t0);
          }
          if (r > 0) continue;
          backend->read(*in.bufs.back(), y.data(), y.size() * sizeof(float));
          if (v == 0) first = y;
          double diff = 0, scale = 0;
          for (std::size_t i = 0; i < y.size(); ++i)
            diff = std::max(diff, (double)std::abs(y[i] - first[i])), scale = std::max(scale, (double)std::abs(first[i]));
          if (diff > 1e-4 * scale) fmt::print("  {}: Y differs from the first variant's by {:.3g} (max |Y| {:.3g})\n", vs[v].name, diff, scale);
        }
      const double flops = p->flops(sizes), m0 = median_of(t[0]);
      for (std::size_t v = 0; v < vs.size(); ++v) {
        const auto [lo, hi] = std::minmax_element(t[v].begin(), t[v].end());
        const double m = median_of(t[v]);
        fmt::print("E={:<3} {:<8} {:<52} {:8.2f} ms ({:.2f}..{:.2f}) {:6.1f} GF/s  {:.3f}x the first\n", E,
                   skewed ? "skewed" : "balanced", vs[v].name, m * 1e3, *lo * 1e3, *hi * 1e3, flops / m / 1e9, m0 / m);
      }
    }

  if (gemm) {
    const auto g = find_problem("gemm");
    const KernelSpec gs = library_kernel(*g, Lang::cpp);
    const ParamValues params = gs.resolve({});
    auto m = compile(*backend, gs.source, gs, params);
    const Sizes sizes = g->resolve_sizes({{"M", T * K}, {"N", F}, {"K", H}});
    Inputs in = upload(*backend, *g, sizes, 0);
    const LaunchGeometry geo = gs.geometry(params, sizes);
    std::vector<double> t;
    for (int q = 0; q < rounds * reps; ++q) {
      const double t0 = bench::clock_s(cpu_clock);
      backend->run(*m, geo, in.args);
      t.push_back(bench::clock_s(cpu_clock) - t0);
    }
    fmt::print("gemm M={} N={} K={} (defaults): {:.2f} ms, {:.1f} GF/s\n", T * K, F, H, median_of(t) * 1e3,
               g->flops(sizes) / median_of(t) / 1e9);
  }
  return 0;
}
