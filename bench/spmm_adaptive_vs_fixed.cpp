// Density-adaptive spmm (kernels/sparse/spmm_adaptive.cpp: per tile of RT rows, a dense
// register-blocked path or the CSR path, chosen from the tile's measured density) against each
// fixed kernel: spmm.cpu (the library default, CSR with work-balanced row blocks), the adaptive
// kernel forced to CSR (DENSE_PERMILLE=1001) and forced dense (DENSE_PERMILLE=0).
//
// Matrices (M = K rows and columns, N dense columns): `mixed`, the mixed-density generator here:
// bands of 64 rows cycling through densities 0.5%, 5%, 30% and 90% (columns uniform, distinct,
// ascending per row; seeded), so no fixed choice suits every band; and for where the choice
// cannot win or may lose: uniform at 1% (CSR everywhere), uniform at 60% (dense everywhere),
// uniform at the threshold's density (either path, the worst case for a wrong guess), and the
// library's dense_row pattern at 1% (one full row: its tile's density is about 1/RT + 1%, so
// CSR is chosen and that row costs what it costs CSR).
//
// Every variant's C is checked against the problem's double reference (within 1e-4 relative
// to the row's magnitude) before timing. Then `--rounds` rounds; each round times every
// variant (median of its samples) in rotation; per round the ratio of the best fixed kernel (the
// one of lowest median over the rounds) to adaptive (> 1: adaptive faster than every fixed
// kernel), median over rounds (min..max). CPU timings.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/measure.hpp"
#include "kforge/sparse.hpp"
#include "sparse_bench.hpp"

using namespace kforge;

namespace {

// Bands of `band` rows cycling through `densities`; columns drawn without repetition.
sparse::Csr mixed_density(std::int64_t rows, std::int64_t cols, const std::vector<double>& densities,
                          std::int64_t band, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  sparse::Csr a;
  a.rows = rows, a.cols = cols;
  a.row_ptr.push_back(0);
  std::vector<std::int64_t> all(cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double d = densities[static_cast<std::size_t>(r / band) % densities.size()];
    const auto n = std::max<std::int64_t>(1, std::llround(d * static_cast<double>(cols)));
    std::iota(all.begin(), all.end(), 0);
    for (std::int64_t t = 0; t < n; ++t)
      std::swap(all[t], all[t + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(cols - t))]);
    std::sort(all.begin(), all.begin() + n);
    for (std::int64_t t = 0; t < n; ++t) a.col_idx.push_back(all[t]), a.values.push_back(static_cast<float>(value(rng)));
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
  }
  return a;
}

struct Variant {
  std::string name;
  bench::Launch launch;
  std::vector<double> seconds;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"density-adaptive spmm vs each fixed kernel, CPU timings"};
  std::int64_t M = 4096, N = 64;
  int rounds = 3, threads = 0;
  double seconds = 0.4;
  std::int64_t threshold = -1;
  app.add_option("--rows", M, "M = K")->capture_default_str();
  app.add_option("--cols", N, "N, dense columns")->capture_default_str();
  app.add_option("--rounds", rounds, "rounds")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per variant per round")->capture_default_str();
  app.add_option("--threads", threads, "threads (0: all cores)")->capture_default_str();
  app.add_option("--threshold", threshold, "the adaptive kernel's DENSE_PERMILLE (-1: its default)");
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  const auto problem = find_problem("spmm");
  const KernelSpec fixed = library_kernel(*problem, Lang::cpp), adaptive = bench::kernel_named(*problem, "spmm_adaptive.cpu");
  ParamValues chosen;
  if (threshold >= 0) chosen["DENSE_PERMILLE"] = threshold;
  const auto at = adaptive.resolve(chosen).at("DENSE_PERMILLE");
  fmt::print(stderr, "cpu: {}\n", backend->device());
  MeasureOptions o;
  o.min_repetitions = 5;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;

  struct Input {
    std::string name;
    sparse::Csr a;
  };
  std::vector<Input> inputs;
  inputs.push_back({"mixed 0.5/5/30/90%", mixed_density(M, M, {0.005, 0.05, 0.3, 0.9}, 64, 7)});
  inputs.push_back({"uniform 1%", mixed_density(M, M, {0.01}, M, 8)});
  inputs.push_back({"uniform 60%", mixed_density(M, M, {0.6}, M, 9)});
  // At the threshold's density; with the dense path off (DENSE_PERMILLE > 1000: no density
  // reaches it) at 90%, the mixed generator's densest band, where the dense path comes closest.
  if (at > 1000)
    inputs.push_back({"uniform 90% (dense path off)", mixed_density(M, M, {0.9}, M, 10)});
  else
    inputs.push_back({fmt::format("uniform {:.0f}% (threshold)", at / 10.0), mixed_density(M, M, {std::max(0.005, at / 1000.0)}, M, 10)});
  inputs.push_back({"dense_row 1%", sparse::generate(sparse::Pattern::dense_row, M, M, M * M / 100, 11)});

  fmt::print("spmm, M = K = {}, N = {}; CPU timings on {} thread(s); adaptive DENSE_PERMILLE={}\n", M, N,
             threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()), at);
  fmt::print("| matrix | nnz | spmm.cpu ms | CSR-only ms | dense-only ms | adaptive ms | adaptive SOL% | best fixed / adaptive | load |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---|---:|\n");
  const Ceilings roofs = ceilings(*backend);
  for (const auto& input : inputs) {
    const sparse::Csr& a = input.a;
    const Sizes sizes{{"M", M}, {"K", M}, {"N", N}, {"NNZ", std::max<std::int64_t>(1, a.nnz())}};
    Instance in = problem->make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, 1, {{"pattern", 0}});
    for (std::int64_t r = 0; r <= M; ++r) in.tensors[0][r] = static_cast<double>(a.row_ptr[r]);
    for (std::int64_t p = 0; p < a.nnz(); ++p) in.tensors[1][p] = static_cast<double>(a.col_idx[p]), in.tensors[2][p] = a.values[p];
    std::vector<std::vector<double>> ref, mag;
    problem->reference(in, ref, mag);
    std::vector<std::unique_ptr<Buffer>> b;
    for (int t = 0; t < 4; ++t) b.push_back(bench::upload(*backend, *problem, in, t));
    auto c = bench::upload(*backend, {}, M * N);
    const std::vector<Arg> args{Arg::buf(*b[0]), Arg::buf(*b[1]), Arg::buf(*b[2]), Arg::buf(*b[3]), Arg::buf(*c),
                                Arg::i(static_cast<std::int32_t>(M)), Arg::i(static_cast<std::int32_t>(M)),
                                Arg::i(static_cast<std::int32_t>(N)), Arg::i(static_cast<std::int32_t>(sizes.at("NNZ"))),
                                Arg::f(0.0f)};
    std::vector<Variant> v;
    v.push_back({"spmm.cpu", bench::compile(*backend, fixed, sizes, {}), {}});
    v.push_back({"csr-only", bench::compile(*backend, adaptive, sizes, {{"DENSE_PERMILLE", 1001}}), {}});
    v.push_back({"dense-only", bench::compile(*backend, adaptive, sizes, {{"DENSE_PERMILLE", 0}}), {}});
    v.push_back({"adaptive", bench::compile(*backend, adaptive, sizes, chosen), {}});
    for (auto& var : v) {  // each variant right before timing it
      var.launch(args);
      const auto got = bench::download(*backend, *c, M * N);
      for (std::int64_t e = 0; e < M * N; ++e)
        if (std::fabs(got[e] - ref[0][e]) > 1e-4 * (1 + mag[0][e]))
          throw std::runtime_error(fmt::format("{} is wrong on {} at C[{}]: {} vs {}", var.name, input.name, e, got[e], ref[0][e]));
    }
    for (int r = 0; r < rounds; ++r)
      for (auto& var : v) var.seconds.push_back(measure([&] { return var.launch(args); }, o).median_s);
    // Against the one fixed kernel of lowest median, round by round: the minimum of three noisy
    // times per round against one would read a tie as a loss (csr-only is adaptive's own code
    // with its dense path off: where no tile is dense the two are the same kernel).
    std::size_t best = 0;
    for (std::size_t k = 1; k < 3; ++k)
      if (median_of(v[k].seconds) < median_of(v[best].seconds)) best = k;
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) ratio.push_back(v[best].seconds[r] / v[3].seconds[r]);
    // SOL: the problem's FLOPs and fewest bytes (the structure included) at adaptive's median,
    // against the roof of the level its bytes fit (hot: the inputs stay in cache between runs).
    const double sol = roofline(roofs, DType::fp32, problem->flops(sizes), problem->bytes(sizes, DType::fp32),
                                median_of(v[3].seconds), 0, /*hot=*/true).sol_fraction;
    fmt::print("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.1f} | {} | {} |\n", input.name, a.nnz(),
               median_of(v[0].seconds) * 1e3, median_of(v[1].seconds) * 1e3, median_of(v[2].seconds) * 1e3,
               median_of(v[3].seconds) * 1e3, 100 * sol, bench::ratio_cell(ratio), bench::load_average());
  }
  fmt::print("({} rounds; each round times the four in turn, median of its samples; ratio = the time of the fixed "
             "kernel of lowest median / adaptive's, per round, median (min..max): > 1 adaptive beats every fixed kernel; "
             "ms columns are medians over rounds; load = 1-minute load average)\n", rounds);
  return 0;
}
