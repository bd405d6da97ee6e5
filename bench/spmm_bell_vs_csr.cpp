// spmm over blocked-ELL (kernels/sparse/spmm_bell.cpp, tiles of BS x BS) against the CSR
// library kernel spmm.cpu on the same matrix: where the tiles are full (block-sparse: the
// `block` generator's 4-row groups sharing 4-column blocks) blocked-ELL should win (no index per
// nonzero, each B row loaded once per tile); where they are mostly zeros (uniform) it should
// lose (it multiplies every stored zero, and pads every block row to the fullest one's count).
//
// Matrices M = K (--rows), N dense columns (--cols): block at 5%, banded at 2%, uniform at 1% and
// 10% (the library's generators, values uniform in [-1, 1)). The blocked-ELL copy is made once
// (sparse::to_blocked_ell, not timed); its fill (nonzero share of the stored cells) is printed.
// Every variant's C is checked against spmm's double reference (1e-4 relative to the row's
// magnitude) before timing; then `--rounds` rounds, each timing every variant (median of its
// samples) in turn; ratio per round = spmm.cpu / blocked-ELL (> 1: blocked-ELL faster), median
// over rounds (min..max). CPU timings.
#include <cmath>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/measure.hpp"
#include "kforge/sparse.hpp"
#include "kforge/util.hpp"
#include "sparse_bench.hpp"

using namespace kforge;

namespace {

bench::Launch compile_bell(Backend& backend, std::int64_t bs, std::int64_t block_rows, std::int64_t N) {
  bench::Launch l;
  l.params = {{"BS", bs}, {"BN", 64}, {"NV", bs <= 4 ? 2 : 1}, {"VW", 0}};
  Defines defines;
  for (const auto& [k, v] : l.params) defines.emplace_back(k, std::to_string(v));
  defines.emplace_back("KF_DTYPE_FP32", "1");
  l.module = backend.compile(embedded_file("kernels/sparse/spmm_bell.cpp"), "spmm_bell", defines);
  l.geometry.grid = {(N + 63) / 64, block_rows, 1};
  l.backend = &backend;
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spmm over blocked-ELL vs CSR spmm.cpu, CPU timings"};
  std::int64_t M = 4096, N = 64;
  int rounds = 3, threads = 0;
  double seconds = 0.4;
  std::vector<std::int64_t> blocks{4, 8};
  app.add_option("--rows", M, "M = K")->capture_default_str();
  app.add_option("--cols", N, "N, dense columns")->capture_default_str();
  app.add_option("--blocks", blocks, "tile sizes BS")->capture_default_str();
  app.add_option("--rounds", rounds, "rounds")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per variant per round")->capture_default_str();
  app.add_option("--threads", threads, "threads (0: all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  const auto problem = find_problem("spmm");
  fmt::print(stderr, "cpu: {}\n", backend->device());
  MeasureOptions o;
  o.min_repetitions = 5;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;
  struct Input {
    std::string name;
    sparse::Pattern pattern;
    double density;
  };
  const std::vector<Input> inputs{{"block 5%", sparse::Pattern::block, 0.05},
                                  {"banded 2%", sparse::Pattern::banded, 0.02},
                                  {"uniform 1%", sparse::Pattern::uniform, 0.01},
                                  {"uniform 10%", sparse::Pattern::uniform, 0.10}};
  fmt::print("spmm, M = K = {}, N = {}; CPU timings on {} thread(s)\n", M, N,
             threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()));
  fmt::print("| matrix | nnz | BS | fill | EC | spmm.cpu (CSR) ms | blocked-ELL ms | CSR / blocked-ELL | load |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---|---:|\n");
  for (const auto& input : inputs) {
    sparse::Csr a = sparse::generate(input.pattern, M, M, std::llround(input.density * M * M), 13);
    const Sizes sizes{{"M", M}, {"K", M}, {"N", N}, {"NNZ", std::max<std::int64_t>(1, a.nnz())}};
    Instance in = problem->make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, 1, {{"pattern", 0}});
    for (std::int64_t r = 0; r <= M; ++r) in.tensors[0][r] = static_cast<double>(a.row_ptr[r]);
    for (std::int64_t p = 0; p < a.nnz(); ++p) {
      in.tensors[1][p] = static_cast<double>(a.col_idx[p]);
      a.values[p] = in.tensors[2][p] = static_cast<float>(in.tensors[2][p]);
    }
    std::vector<std::vector<double>> ref, mag;
    problem->reference(in, ref, mag);
    std::vector<std::unique_ptr<Buffer>> b;
    for (int t = 0; t < 4; ++t) b.push_back(bench::upload(*backend, in.tensors[t]));
    auto c = bench::upload(*backend, {}, M * N);
    const std::vector<Arg> csr_args{Arg::buf(*b[0]), Arg::buf(*b[1]), Arg::buf(*b[2]), Arg::buf(*b[3]), Arg::buf(*c),
                                    Arg::i(static_cast<std::int32_t>(M)), Arg::i(static_cast<std::int32_t>(M)),
                                    Arg::i(static_cast<std::int32_t>(N)), Arg::i(static_cast<std::int32_t>(sizes.at("NNZ"))),
                                    Arg::f(0.0f)};
    const bench::Launch csr = bench::prepare(*backend, *problem, sizes);
    const auto check = [&](const std::string& what) {
      const auto got = bench::download(*backend, *c, M * N);
      for (std::int64_t e = 0; e < M * N; ++e)
        if (std::fabs(got[e] - ref[0][e]) > 1e-4 * (1 + mag[0][e]))
          throw std::runtime_error(fmt::format("{} is wrong on {} at C[{}]: {} vs {}", what, input.name, e, got[e], ref[0][e]));
    };
    csr(csr_args);
    check("spmm.cpu");
    for (const std::int64_t bs : blocks) {
      const sparse::BlockedEll e = sparse::to_blocked_ell(a, bs);
      auto bc = bench::upload(*backend, std::vector<double>(e.block_col.begin(), e.block_col.end()), 1);
      auto bv = bench::upload(*backend, e.values, 1);
      const std::vector<Arg> bell_args{Arg::buf(*bc), Arg::buf(*bv), Arg::buf(*b[3]), Arg::buf(*c),
                                       Arg::i(static_cast<std::int32_t>(M)), Arg::i(static_cast<std::int32_t>(M)),
                                       Arg::i(static_cast<std::int32_t>(N)), Arg::i(static_cast<std::int32_t>(e.ell_cols))};
      const bench::Launch bell = compile_bell(*backend, bs, e.block_rows(), N);
      bell(bell_args);
      check(fmt::format("blocked-ELL BS={}", bs));
      std::vector<double> t_csr, t_bell, ratio;
      for (int r = 0; r < rounds; ++r) {
        t_csr.push_back(measure([&] { return csr(csr_args); }, o).median_s);
        t_bell.push_back(measure([&] { return bell(bell_args); }, o).median_s);
        ratio.push_back(t_csr.back() / t_bell.back());
      }
      fmt::print("| {} | {} | {} | {:.2f} | {} | {:.3f} | {:.3f} | {} | {} |\n", input.name, a.nnz(), bs, e.fill(), e.ell_cols,
                 median_of(t_csr) * 1e3, median_of(t_bell) * 1e3, bench::ratio_cell(ratio), bench::load_average());
    }
  }
  fmt::print("({} rounds; each round times CSR then blocked-ELL, median of its samples; ratio = CSR time / blocked-ELL time "
             "per round, median (min..max): > 1 blocked-ELL faster; fill = nonzero share of the stored tile cells; EC = "
             "slots per block row; load = 1-minute load average)\n", rounds);
  return 0;
}
