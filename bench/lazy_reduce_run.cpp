// One timed lazy reduction on the cpu backend, in a process of its own, so the caller
// (bench/lazy_reduce_vs_peers.py) reads this process's peak resident memory (ru_maxrss) from
// wait4. The library kernel at its default parameters on random normal inputs (N = M points in
// D dimensions), one warm-up launch, then `reps` timed launches; a few rows are checked against
// the problem's double reference on those rows only (the full reference is N x M in double).
// Prints one JSON line: seconds (each launch), flops, bytes, sol_fraction (cached ceilings).
// A logsumexp gradient (lazy_reduce:grad_<x|y>:logsumexp:<formula>) gets its LSE input from the
// forward's library kernel run once, untimed, on the same points, as autograd's backward gets it.
#include <algorithm>
#include <cmath>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/measure.hpp"
#include "kforge/problem.hpp"

using namespace kforge;

int main(int argc, char** argv) {
  CLI::App app{"one timed lazy reduction (cpu backend), for bench/lazy_reduce_vs_peers.py"};
  std::string problem = "lazy_reduce.gauss_sum";
  std::int64_t n = 10000, d = 3;
  int reps = 3, threads = 0, warmup = 1;
  double s = 1.0;
  app.add_option("--problem", problem);
  app.add_option("--n", n, "N = M points");
  app.add_option("--d", d, "dimensions");
  app.add_option("--reps", reps, "timed launches");
  app.add_option("--warmup", warmup, "untimed launches first");
  app.add_option("--threads", threads, "cpu threads (0: all cores)");
  app.add_option("--s", s, "the bandwidth scalar s");
  CLI11_PARSE(app, argc, argv);

  const auto p = find_problem(problem);
  const Sizes sizes = p->resolve_sizes({{"N", n}, {"M", n}, {"D", d}});
  const KernelSpec k = library_kernel(*p, Lang::cpp, sizes);
  const ParamValues params = k.resolve({});
  auto backend = make_backend("cpu", {.threads = threads});
  Defines defines;
  for (const auto& [name, v] : params) defines.emplace_back(name, std::to_string(v));
  defines.emplace_back("KF_DTYPE_FP32", "1");
  auto module = backend->compile(k.source, k.entry, defines, k.source_path);

  // Inputs (float), outputs, arguments in the ABI's order: tensors, sizes, scalars.
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal(0, 1);
  const auto specs = p->tensors();
  std::vector<std::vector<float>> host(specs.size());
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Arg> args;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    host[t].resize(static_cast<std::size_t>(p->tensor_elements(t, sizes)));
    if (specs[t].role == Role::in) for (auto& v : host[t]) v = normal(rng);
    bufs.push_back(backend->alloc(host[t].size() * sizeof(float)));
    backend->write(*bufs.back(), host[t].data(), host[t].size() * sizeof(float));
    args.push_back(Arg::buf(*bufs.back()));
  }
  for (const auto& name : p->size_names()) args.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(name))));
  Scalars scalars;
  for (const auto& name : p->scalar_names()) args.push_back(Arg::f(static_cast<float>(s))), scalars[name] = s;
  if (specs.size() > 2 && specs[2].name == "LSE") {
    const std::string tail = problem.substr(problem.find(":logsumexp:") + 1);
    const auto fp = find_problem("lazy_reduce:" + tail);
    const KernelSpec fk = library_kernel(*fp, Lang::cpp, fp->resolve_sizes({{"N", n}, {"M", n}, {"D", d}}));
    Defines fd;
    for (const auto& [name, v] : fk.resolve({})) fd.emplace_back(name, std::to_string(v));
    fd.emplace_back("KF_DTYPE_FP32", "1");
    auto fm = backend->compile(fk.source, fk.entry, fd, fk.source_path);
    std::vector<Arg> fa{Arg::buf(*bufs[0]), Arg::buf(*bufs[1]), Arg::buf(*bufs[2])};
    for (std::size_t a = specs.size(); a < args.size(); ++a) fa.push_back(args[a]);  // N, M, D, scalars
    backend->run(*fm, fk.geometry(fk.resolve({}), sizes), fa);
    backend->read(*bufs[2], host[2].data(), host[2].size() * sizeof(float));
  }
  const LaunchGeometry g = k.geometry(params, sizes);

  for (int w = 0; w < warmup; ++w) backend->run(*module, g, args);
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) seconds.push_back(backend->run(*module, g, args));

  // The first rows against the reference on an instance of those rows only.
  const std::int64_t rows = std::min<std::int64_t>(n, 4);
  Sizes small = sizes;
  small["N"] = rows;
  Instance inst = p->make_instance(small, DType::fp32, Distribution::normal, 1, 0, scalars);
  inst.tensors[0].assign(host[0].begin(), host[0].begin() + rows * d);
  for (std::size_t t = 1; t < specs.size(); ++t)
    if (specs[t].role == Role::in) inst.tensors[t].assign(host[t].begin(), host[t].end());
  std::vector<std::vector<double>> ref, mag;
  p->reference(inst, ref, mag);
  std::size_t first_out = 0;
  while (specs[first_out].role == Role::in) ++first_out;
  std::vector<float> got(host[first_out].size());
  backend->read(*bufs[first_out], got.data(), got.size() * sizeof(float));
  double worst = 0;
  for (std::size_t e = 0; e < ref[0].size(); ++e)
    worst = std::max(worst, std::fabs(got[e] - ref[0][e]) / (std::fabs(ref[0][e]) + 1e-30));

  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const Ceilings c = ceilings(*backend);
  const Roofline roof = roofline(c, DType::fp32, p->flops(sizes), p->bytes(sizes, DType::fp32), median, 0, /*hot=*/true);
  nlohmann::json out{{"problem", problem},           {"n", n},
                     {"d", d},                       {"seconds", seconds},
                     {"median_s", median},           {"flops", p->flops(sizes)},
                     {"sol_fraction", roof.sol_fraction}, {"bound", roof.bound},
                     {"check_rows", rows},           {"check_max_rel_err", worst},
                     {"device", backend->device()}};
  fmt::print("{}\n", out.dump());
  return worst < 1e-3 ? 0 : 1;
}
