// kforge's fusedmm (one kernel: sampled values never written) against kforge's sddmm followed by
// kforge's spmm on the sampled values (two kernels, the NNZ sampled values written and read
// back), both on the cpu backend with their default parameters, op 0 (the composition computes
// exactly that), and Eigen's unfused composition (the problem's baseline, one thread).
//
// Each shape (M = K, uniform pattern at a sparsity, D = N dense columns) is first verified
// (quick protocol, fusedmm at the shape itself) and the fused and unfused outputs compared;
// then `--rounds` rounds, each timing fused beside unfused and beside Eigen in alternation
// (measure_pair). Ratio per round = the other's median / fused median (> 1: fused faster); the
// table gives the median over rounds with its spread (min..max), each side's SOL fraction by its
// own byte count (the unfused pair moves the sampled values twice more) and the load average.
// CPU timings are CPU timings: the figures describe this machine. `--fused-param NAME=VALUE`
// (repeatable) overrides the fused kernel's parameters: `--fused-param KP=0 --fused-param
// STAGE=0` is the kernel before round 9 (no 2-D tiles, no staged update), for a before/after.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/measure.hpp"
#include "sparse_bench.hpp"

using namespace kforge;

namespace {

struct Row {
  Sizes sizes;
  double sparsity;
  std::vector<double> fused_s, unfused_s, unfused_r, eigen_r;
  std::string load;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge fusedmm vs kforge sddmm + spmm (and Eigen unfused), CPU timings"};
  std::vector<std::int64_t> rows{1024, 4096}, widths{32, 128};
  std::vector<double> sparsities{0.9, 0.99};
  int rounds = 3, threads = 0;
  double seconds = 1.0;
  app.add_option("--rows", rows, "M = K")->delimiter(',')->capture_default_str();
  app.add_option("--cols", widths, "D = N, the dense widths")->delimiter(',')->capture_default_str();
  app.add_option("--sparsity", sparsities)->delimiter(',')->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds per shape")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per pair per round")->capture_default_str();
  app.add_option("--threads", threads, "cpu threads (0: all cores)")->capture_default_str();
  bool same_yz = false;
  app.add_flag("--same-yz", same_yz, "Z is Y (one buffer; a graph embedding's update): the fused kernel reads "
                                      "each gathered row twice from cache, the unfused pair from two passes");
  std::vector<std::string> fused_params;
  app.add_option("--fused-param", fused_params,
                 "NAME=VALUE for fusedmm.cpu, repeatable (KP=0 and STAGE=0 give the kernel before its 2-D tiles "
                 "and staged update)");
  CLI11_PARSE(app, argc, argv);
  ParamValues fused_overrides;
  for (const auto& kv : fused_params) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      fmt::print(stderr, "--fused-param {}: expected NAME=VALUE, e.g. KP=0\n", kv);
      return 2;
    }
    try {
      fused_overrides[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    } catch (const std::exception&) {
      fmt::print(stderr, "--fused-param {}: the value must be an integer, e.g. KP=0\n", kv);
      return 2;
    }
  }

  auto backend = make_backend("cpu", {.threads = threads});
  const auto fp = find_problem("fusedmm"), sp = find_problem("sddmm"), mp = find_problem("spmm");
  fmt::print(stderr, "cpu: {}\n", backend->device());
  MeasureOptions o;
  o.min_repetitions = 3;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;
  const Scalars scalars{{"pattern", 0}, {"op", 0}};
  std::string params_text;

  try {  // a parameter the kernel does not have, or a value outside its list, exits 2 naming it
    const KernelSpec k = library_kernel(*fp, Lang::cpp, fp->default_sizes());
    if (const auto bad = k.check(k.resolve(fused_overrides), fp->default_sizes()); bad && !fused_overrides.empty()) {
      fmt::print(stderr, "--fused-param: {}\n", *bad);
      return 2;
    }
  } catch (const UsageError& e) {
    fmt::print(stderr, "--fused-param: {}\n", e.what());
    return 2;
  }

  std::vector<Row> table;
  for (const auto M : rows)
    for (const auto W : widths)
      for (const double s : sparsities) {
        const auto nnz = std::max<std::int64_t>(1, static_cast<std::int64_t>((1 - s) * M * M));
        const Sizes fs = fp->resolve_sizes({{"M", M}, {"K", M}, {"D", W}, {"N", W}, {"NNZ", nnz}});
        const Sizes ss{{"M", M}, {"K", M}, {"D", W}, {"NNZ", nnz}}, ms{{"M", M}, {"K", M}, {"N", W}, {"NNZ", nnz}};
        fp->check_sizes(fs);
        fmt::print(stderr, "  M=K={} D=N={} sparsity {}: verifying ...\n", M, W, s);
        bench::verify_quick(*backend, "fusedmm", fs, scalars, {}, threads);
        const Instance in = fp->make_instance(fs, DType::fp32, Distribution::normal, 0x5eed, 1, scalars);
        const auto fused = bench::prepare(*backend, *fp, fs, fused_overrides), sddmm = bench::prepare(*backend, *sp, ss),
                   spmm = bench::prepare(*backend, *mp, ms);
        params_text = fmt::format("fusedmm {}; sddmm {}; spmm {}", fused.params_text(), sddmm.params_text(),
                                  spmm.params_text());
        std::vector<std::unique_ptr<Buffer>> b;
        for (int t = 0; t < 5; ++t) b.push_back(bench::upload(*backend, *fp, in, t == 4 && same_yz ? 3 : t));
        Buffer& z = same_yz ? *b[3] : *b[4];
        auto out_f = bench::upload(*backend, {}, M * W), sampled = bench::upload(*backend, {}, nnz),
             out_u = bench::upload(*backend, {}, M * W);
        auto ints = [](std::initializer_list<std::int64_t> v) {
          std::vector<Arg> a;
          for (const auto x : v) a.push_back(Arg::i(static_cast<std::int32_t>(x)));
          return a;
        };
        auto join = [](std::vector<Arg> a, const std::vector<Arg>& b2) {
          a.insert(a.end(), b2.begin(), b2.end());
          return a;
        };
        const auto fused_args = join({Arg::buf(*b[0]), Arg::buf(*b[1]), Arg::buf(*b[2]), Arg::buf(*b[3]),
                                      Arg::buf(z), Arg::buf(*out_f)},
                                     join(ints({M, M, W, W, nnz}), {Arg::f(0.0f), Arg::f(0.0f)}));
        const auto sddmm_args = join({Arg::buf(*b[0]), Arg::buf(*b[1]), Arg::buf(*b[2]), Arg::buf(*b[3]), Arg::buf(*sampled)},
                                     join(ints({M, M, W, nnz}), {Arg::f(0.0f)}));
        const auto spmm_args = join({Arg::buf(*b[0]), Arg::buf(*b[1]), Arg::buf(*sampled), Arg::buf(z), Arg::buf(*out_u)},
                                    join(ints({M, M, W, nnz}), {Arg::f(0.0f)}));
        const auto run_fused = [&] { return fused(fused_args); };
        const auto run_unfused = [&] { return sddmm(sddmm_args) + spmm(spmm_args); };
        // The two paths agree (relative Frobenius difference), so the comparison is of one result.
        run_fused();
        run_unfused();
        const auto f = bench::download(*backend, *out_f, M * W), u = bench::download(*backend, *out_u, M * W);
        double diff = 0, norm = 0;
        for (std::size_t i = 0; i < f.size(); ++i) diff += (f[i] - u[i]) * (f[i] - u[i]), norm += u[i] * u[i];
        if (!(std::sqrt(diff) <= 1e-4 * std::sqrt(norm) + 1e-30)) {
          fmt::print(stderr, "fused and unfused outputs differ: relative {:.3g}\n", std::sqrt(diff / norm));
          return 1;
        }
        Instance eigen_in = in;
        if (same_yz) eigen_in.tensors[4] = in.tensors[3];
        auto eigen = fp->baseline(eigen_in, threads);
        const auto run_eigen = [&] {
          const auto t0 = std::chrono::steady_clock::now();
          eigen();
          return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        };
        Row row{fs, s, {}, {}, {}, {}, bench::load_average()};
        for (int r = 0; r < rounds; ++r) {
          const PairTiming pu = measure_pair(run_fused, run_unfused, o);
          const PairTiming pe = measure_pair(run_fused, run_eigen, o);
          row.fused_s.push_back(pu.a.median_s);
          row.unfused_s.push_back(pu.b.median_s);
          row.unfused_r.push_back(pu.b.median_s / pu.a.median_s);
          row.eigen_r.push_back(pe.b.median_s / pe.a.median_s);
        }
        table.push_back(std::move(row));
      }

  const Ceilings roofs = ceilings(*backend);
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  fmt::print("fusedmm vs sddmm + spmm, op 0, uniform pattern, M = K, D = N{}; CPU timings on {} thread(s)\n",
             same_yz ? ", Z = Y (one buffer)" : "", nthreads);
  fmt::print("| M=K | D=N | sparsity | fused ms | fused SOL% | unfused ms | unfused SOL% | unfused / fused | Eigen unfused (1 thread) / fused | load |\n");
  fmt::print("|---:|---:|---:|---:|---:|---:|---:|---|---|---:|\n");
  for (const auto& r : table) {
    const Sizes& s = r.sizes;
    const double f = median_of(r.fused_s), u = median_of(r.unfused_s);
    const Sizes ss{{"M", s.at("M")}, {"K", s.at("K")}, {"D", s.at("D")}, {"NNZ", s.at("NNZ")}};
    const Sizes ms{{"M", s.at("M")}, {"K", s.at("K")}, {"N", s.at("N")}, {"NNZ", s.at("NNZ")}};
    const double sol_f = roofline(roofs, DType::fp32, fp->flops(s), fp->bytes(s, DType::fp32), f, 0, /*hot=*/true).sol_fraction;
    const double sol_u = roofline(roofs, DType::fp32, sp->flops(ss) + mp->flops(ms),
                                  sp->bytes(ss, DType::fp32) + mp->bytes(ms, DType::fp32), u, 0, /*hot=*/true).sol_fraction;
    fmt::print("| {} | {} | {:.4g}% | {:.3f} | {:.1f} | {:.3f} | {:.1f} | {} | {} | {} |\n", s.at("M"), s.at("D"),
               100 * r.sparsity, f * 1e3, 100 * sol_f, u * 1e3, 100 * sol_u, bench::ratio_cell(r.unfused_r), bench::ratio_cell(r.eigen_r), r.load);
  }
  fmt::print("({} rounds; ratio = other median / fused median per round, > 1: fused faster; median (min..max); "
             "load = 1-minute load average; kernel parameters: {})\n", rounds, params_text);
  return 0;
}
