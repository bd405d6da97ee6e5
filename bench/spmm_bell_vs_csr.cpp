// spmm over blocked-ELL (kernels/sparse/spmm_bell.cpp / .cl, tiles of BS x BS) against the CSR
// library kernel of the same backend (spmm.cpu / spmm.opencl) on the same matrix: where the tiles are full (block-sparse: the
// `block` generator's 4-row groups sharing 4-column blocks) blocked-ELL should win (no index per
// nonzero, each B row loaded once per tile); where they are mostly zeros (uniform) it should
// lose (it multiplies every stored zero, and pads every block row to the fullest one's count).
//
// Matrices M = K (--rows), N dense columns (--cols): block at 5%, banded at 2%, uniform at 1% and
// 10%. Each comes from the spmm_bell problem (kernels/sparse/spmm_bell_problem.hpp: the pattern
// generator tiled at BS, EC = the fullest block row's tiles, so nothing is cut; not timed) and its
// library kernel for --backend (cpu or opencl); the CSR copy for spmm is the same stored matrix
// (sparse::to_csr). Its fill (nonzero share of the stored cells, padding slots included) is
// printed. Both C are checked against spmm_bell's double reference (1e-4 relative to the row's
// magnitude) before timing; then `--rounds` rounds, each timing every variant (median of its
// samples) in turn; ratio per round = spmm.cpu / blocked-ELL (> 1: blocked-ELL faster), median
// over rounds (min..max). --backend opencl: both kernels at their spec defaults on the OpenCL
// device (PoCL on this machine's CPU: the CPU again, through PoCL's compiler), the backend's times.
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

// The stored blocked-ELL matrix of a spmm_bell instance.
sparse::BlockedEll stored(const Instance& in) {
  sparse::BlockedEll e;
  e.rows = in.sizes.at("M"), e.cols = in.sizes.at("K"), e.block = in.sizes.at("BS"), e.ell_cols = in.sizes.at("EC");
  e.block_col.assign(in.tensors[0].begin(), in.tensors[0].end());
  e.values = in.tensors[1];
  return e;
}

std::vector<Arg> args_of(const std::vector<std::unique_ptr<Buffer>>& bufs, const Sizes& s, const std::vector<std::string>& names) {
  std::vector<Arg> a;
  for (const auto& b : bufs) a.push_back(Arg::buf(*b));
  for (const auto& n : names) a.push_back(Arg::i(static_cast<std::int32_t>(s.at(n))));
  a.push_back(Arg::f(0.0f));  // pattern: kernels ignore it
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spmm over blocked-ELL vs CSR spmm of the same backend (cpu or opencl)"};
  std::string backend_name = "cpu";
  std::int64_t M = 4096, N = 64;
  int rounds = 3, threads = 0;
  double seconds = 0.4;
  std::vector<std::int64_t> blocks{4, 8};
  app.add_option("--rows", M, "M = K")->capture_default_str();
  app.add_option("--cols", N, "N, dense columns")->capture_default_str();
  app.add_option("--blocks", blocks, "tile sizes BS")->capture_default_str();
  app.add_option("--rounds", rounds, "rounds")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per variant per round")->capture_default_str();
  app.add_option("--threads", threads, "cpu threads (0: all cores)")->capture_default_str();
  app.add_option("--backend", backend_name, "cpu or opencl")->capture_default_str()->check(CLI::IsMember({"cpu", "opencl"}));
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend(backend_name, {.threads = threads});
  if (!backend->can_run()) {
    fmt::print(stderr, "backend {} cannot run here: {}\n", backend_name, backend->device());
    return 2;
  }
  const auto csr_problem = find_problem("spmm"), bell_problem = find_problem("spmm_bell");
  fmt::print(stderr, "{}: {}\n", backend_name, backend->device());
  const std::string csr_name = library_kernel(*csr_problem, backend->lang()).name,
                    bell_name = library_kernel(*bell_problem, backend->lang()).name;
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
  if (backend_name == "cpu")
    fmt::print("spmm, M = K = {}, N = {}; CPU timings on {} thread(s)\n", M, N,
               threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()));
  else
    fmt::print("spmm, M = K = {}, N = {}; {} on {}\n", M, N, backend_name, backend->device());
  fmt::print("| matrix | nnz | BS | fill | EC | {} (CSR) ms | CSR SOL% | {} ms | blocked-ELL SOL% | CSR / blocked-ELL | load |\n",
             csr_name, bell_name);
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  const Ceilings roofs = ceilings(*backend);
  for (const auto& input : inputs) {
    const std::int64_t nnz = std::llround(input.density * M * M);
    for (const std::int64_t bs : blocks) {
      // EC = K/BS holds every tile; the instance is then made again at the fullest block row's
      // count (same seed and trial: the same pattern), as a user would size it.
      const Scalars pattern{{"pattern", static_cast<double>(input.pattern)}};
      Sizes sb{{"M", M}, {"K", M}, {"N", N}, {"NNZ", nnz}, {"BS", bs}, {"EC", (M + bs - 1) / bs}};
      std::int64_t ec = 1;
      {
        const Instance wide = bell_problem->make_instance(sb, DType::fp32, Distribution::normal, 0x5eed, 1, pattern);
        for (std::size_t q = 0; q < wide.tensors[0].size(); q += sb.at("EC")) {
          std::int64_t n = 0;
          while (n < sb.at("EC") && wide.tensors[0][q + n] >= 0) ++n;
          ec = std::max(ec, n);
        }
      }
      sb["EC"] = ec;
      const Instance bin = bell_problem->make_instance(sb, DType::fp32, Distribution::normal, 0x5eed, 1, pattern);
      const sparse::BlockedEll e = stored(bin);
      const sparse::Csr a = sparse::to_csr(e);
      std::vector<std::vector<double>> ref, mag;
      bell_problem->reference(bin, ref, mag);

      const Sizes sc{{"M", M}, {"K", M}, {"N", N}, {"NNZ", std::max<std::int64_t>(1, a.nnz())}};
      std::vector<double> row_ptr(a.row_ptr.begin(), a.row_ptr.end()), col_idx(a.col_idx.begin(), a.col_idx.end());
      std::vector<std::unique_ptr<Buffer>> cb, bb;
      cb.push_back(bench::upload(*backend, row_ptr, 0, DType::int32));
      cb.push_back(bench::upload(*backend, col_idx, 1, DType::int32));
      cb.push_back(bench::upload(*backend, a.values, 1));
      cb.push_back(bench::upload(*backend, bin.tensors[2]));
      cb.push_back(bench::upload(*backend, {}, M * N));
      for (int t = 0; t < 3; ++t) bb.push_back(bench::upload(*backend, *bell_problem, bin, t));
      bb.push_back(bench::upload(*backend, {}, M * N));
      const std::vector<Arg> csr_args = args_of(cb, sc, {"M", "K", "N", "NNZ"});
      const std::vector<Arg> bell_args = args_of(bb, sb, {"M", "K", "N", "NNZ", "BS", "EC"});
      const bench::Launch csr = bench::prepare(*backend, *csr_problem, sc);
      const bench::Launch bell = bench::prepare(*backend, *bell_problem, sb);
      const auto check = [&](const std::string& what, Buffer& c) {
        const auto got = bench::download(*backend, c, M * N);
        for (std::int64_t i = 0; i < M * N; ++i)
          if (std::fabs(got[i] - ref[0][i]) > 1e-4 * (1 + mag[0][i]))
            throw std::runtime_error(fmt::format("{} is wrong on {} at C[{}]: {} vs {}", what, input.name, i, got[i], ref[0][i]));
      };
      csr(csr_args);
      check(csr_name, *cb[4]);
      bell(bell_args);
      check(fmt::format("{} BS={}", bell_name, bs), *bb[3]);
      std::vector<double> t_csr, t_bell, ratio;
      for (int r = 0; r < rounds; ++r) {
        t_csr.push_back(measure([&] { return csr(csr_args); }, o).median_s);
        t_bell.push_back(measure([&] { return bell(bell_args); }, o).median_s);
        ratio.push_back(t_csr.back() / t_bell.back());
      }
      // SOL of each kernel by its own problem's model (its FLOPs on the true nonzeros, its format's
      // fewest bytes: CSR's index per nonzero, blocked-ELL's index per tile) at its median, against
      // the roof of the level those bytes fit (hot: the inputs stay in cache between runs).
      Sizes sb_true = sb;
      sb_true["NNZ"] = std::max<std::int64_t>(1, a.nnz());
      const auto sol = [&](const Problem& p, const Sizes& s, const std::vector<double>& t) {
        return 100 * roofline(roofs, DType::fp32, p.flops(s), p.bytes(s, DType::fp32), median_of(t), 0, /*hot=*/true).sol_fraction;
      };
      fmt::print("| {} | {} | {} | {:.2f} | {} | {:.3f} | {:.1f} | {:.3f} | {:.1f} | {} | {} |\n", input.name, a.nnz(), bs,
                 e.fill(), ec, median_of(t_csr) * 1e3, sol(*csr_problem, sc, t_csr), median_of(t_bell) * 1e3,
                 sol(*bell_problem, sb_true, t_bell), bench::ratio_cell(ratio), bench::load_average());
    }
  }
  fmt::print("({} rounds; each round times CSR then blocked-ELL, median of its samples; ratio = CSR time / blocked-ELL time "
             "per round, median (min..max): > 1 blocked-ELL faster; fill = nonzero share of the stored tile cells; EC = "
             "slots per block row; SOL% = the kernel's share of the roofline for its problem's FLOPs and its format's fewest bytes; "
             "load = 1-minute load average)\n", rounds);
  return 0;
}
