// Density-adaptive gnn_aggregate (kernels/sparse/gnn_aggregate_adaptive.cpp: hubs edge-parallel
// across splitter blocks, each tile of RT rows a dense block or CSR by its subgraph's density)
// against each fixed kernel: gnn_aggregate.cpu (the library default, CSR rows in work-balanced
// blocks), the adaptive kernel forced to CSR row-split (DENSE_PERMILLE=1001, SPLITS=0), to the
// dense block (DENSE_PERMILLE=0, DENSE_KINDS=1, SPLITS=0) and to COO edge-parallel (every row cut across
// --splits splitter blocks: LONG_PERMILLE=0).
//
// Graphs (M nodes, --degree edges a node on average; the library's generators unless said):
// uniform; power_law (in-degree ~ 1/rank: a few hubs); block (4-node groups sharing 4-node
// column blocks: block-sparse); banded (neighbours near the diagonal: overlapping rows); and
// `mixed`, generated here: bands of 64 nodes cycling through a uniform band (--degree edges a
// node), a community band (each node linked to 3/4 of its own band, drawn per node), a sparse
// band (4 edges a node), with a hub every 2048 nodes linked to M/4 nodes: no fixed kernel suits
// every part.
//
// Every variant's output is checked against the problem's double reference (1e-4 relative to
// the row's magnitude) before timing. Then `--rounds` rounds; each times every variant (median of
// its samples) in rotation; per round the ratio best fixed / adaptive, the best fixed kernel being
// the one with the lowest median over the rounds (> 1: adaptive beats every
// fixed kernel), median over rounds (min..max). CPU timings.
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

// Row r's columns: n distinct ones drawn from [lo, lo + span), ascending.
void draw_row(sparse::Csr& a, std::mt19937_64& rng, std::int64_t lo, std::int64_t span, std::int64_t n,
              std::vector<std::int64_t>& all) {
  n = std::min(n, span);
  all.resize(span);
  std::iota(all.begin(), all.end(), lo);
  for (std::int64_t t = 0; t < n; ++t)
    std::swap(all[t], all[t + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span - t))]);
  std::sort(all.begin(), all.begin() + n);
  a.col_idx.insert(a.col_idx.end(), all.begin(), all.begin() + n);
  a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
}

sparse::Csr mixed_graph(std::int64_t M, std::int64_t degree, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  sparse::Csr a;
  a.rows = a.cols = M;
  a.row_ptr.push_back(0);
  std::vector<std::int64_t> all;
  for (std::int64_t r = 0; r < M; ++r) {
    const std::int64_t band = r / 64, lo = band * 64, span = std::min<std::int64_t>(64, M - lo);
    if (r % 2048 == 1024) draw_row(a, rng, 0, M, M / 4, all);  // a hub
    else if (band % 3 == 0) draw_row(a, rng, 0, M, degree, all);
    else if (band % 3 == 1) draw_row(a, rng, lo, span, span * 3 / 4, all);  // a community
    else draw_row(a, rng, 0, M, 4, all);
  }
  a.values.assign(a.col_idx.size(), 0.0);
  return a;
}

struct Variant {
  std::string name;
  bench::Launch launch;
  std::vector<double> seconds;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"density-adaptive gnn_aggregate vs each fixed kernel, CPU timings"};
  std::int64_t M = 16384, N = 64, degree = 16, splits = 32;
  int rounds = 3, threads = 0;
  double seconds = 0.4;
  std::vector<int> kinds{0, 1};
  std::vector<std::string> graphs{"uniform", "power_law", "block", "banded", "mixed"};
  std::vector<std::string> params;
  app.add_option("--nodes", M, "M, nodes")->capture_default_str();
  app.add_option("--cols", N, "N, feature columns")->capture_default_str();
  app.add_option("--degree", degree, "edges a node on average")->capture_default_str();
  app.add_option("--kinds", kinds, "0 GCN, 1 mean")->capture_default_str();
  app.add_option("--graphs", graphs, "uniform, power_law, block, banded, mixed")->capture_default_str();
  app.add_option("--splits", splits, "splitter blocks of the edge-parallel-only variant")->capture_default_str();
  app.add_option("--param", params, "NAME=VALUE for the adaptive kernel (else its defaults)");
  app.add_option("--rounds", rounds, "rounds")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per variant per round")->capture_default_str();
  app.add_option("--threads", threads, "threads (0: all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  const auto problem = find_problem("gnn_aggregate");
  const KernelSpec fixed = library_kernel(*problem, Lang::cpp), adaptive = bench::kernel_named(*problem, "gnn_aggregate_adaptive.cpu");
  const ParamValues chosen = bench::parse_params(params);
  std::string chosen_text;
  for (const auto& [k, v] : adaptive.resolve(chosen)) chosen_text += fmt::format("{}{}={}", chosen_text.empty() ? "" : ",", k, v);
  fmt::print(stderr, "cpu: {}\n", backend->device());
  MeasureOptions o;
  o.min_repetitions = 5;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;

  fmt::print("gnn_aggregate, M = {} nodes, N = {}, {} edges a node; CPU timings on {} thread(s); adaptive {}\n", M, N, degree,
             threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()), chosen_text);
  fmt::print("| graph | kind | edges | gnn_aggregate.cpu ms | CSR-only ms | dense-only ms | edge-parallel-only ms | adaptive ms "
             "| adaptive SOL% | best fixed / adaptive | load |\n");
  fmt::print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  const Ceilings roofs = ceilings(*backend);
  for (const auto& graph : graphs) {
    const sparse::Csr a = graph == "mixed" ? mixed_graph(M, degree, 7)
                                           : sparse::generate(sparse::pattern_from_name(graph), M, M, M * degree, 11);
    for (const int kind : kinds) {
      const Sizes sizes{{"M", M}, {"N", N}, {"NNZ", std::max<std::int64_t>(1, a.nnz())}};
      Instance in = problem->make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, 1,
                                           {{"pattern", 0}, {"kind", static_cast<double>(kind)}});
      for (std::int64_t r = 0; r <= M; ++r) in.tensors[0][r] = static_cast<double>(a.row_ptr[r]);
      for (std::int64_t p = 0; p < a.nnz(); ++p) in.tensors[1][p] = static_cast<double>(a.col_idx[p]);
      std::vector<std::vector<double>> ref, mag;
      problem->reference(in, ref, mag);
      std::vector<std::unique_ptr<Buffer>> b;
      for (int t = 0; t < 3; ++t) b.push_back(bench::upload(*backend, *problem, in, t));
      auto out = bench::upload(*backend, {}, M * N);
      const std::vector<Arg> args{Arg::buf(*b[0]), Arg::buf(*b[1]), Arg::buf(*b[2]), Arg::buf(*out),
                                  Arg::i(static_cast<std::int32_t>(M)), Arg::i(static_cast<std::int32_t>(N)),
                                  Arg::i(static_cast<std::int32_t>(sizes.at("NNZ"))), Arg::f(0.0f),
                                  Arg::f(static_cast<float>(kind))};
      std::vector<Variant> v;
      v.push_back({"gnn_aggregate.cpu", bench::compile(*backend, fixed, sizes, {}), {}});
      v.push_back({"csr-only", bench::compile(*backend, adaptive, sizes, {{"DENSE_PERMILLE", 1001}, {"SPLITS", 0}}), {}});
      v.push_back({"dense-only", bench::compile(*backend, adaptive, sizes, {{"DENSE_PERMILLE", 0}, {"DENSE_KINDS", 1}, {"SPLITS", 0}}), {}});
      v.push_back({"edge-parallel-only", bench::compile(*backend, adaptive, sizes, {{"LONG_PERMILLE", 0}, {"SPLITS", splits}}), {}});
      v.push_back({"adaptive", bench::compile(*backend, adaptive, sizes, chosen), {}});
      for (auto& var : v) {  // each variant right before timing it
        var.launch(args);
        const auto got = bench::download(*backend, *out, M * N);
        for (std::int64_t e = 0; e < M * N; ++e)
          if (std::fabs(got[e] - ref[0][e]) > 1e-4 * (1 + mag[0][e]))
            throw std::runtime_error(fmt::format("{} is wrong on {} at out[{}]: {} vs {}", var.name, graph, e, got[e], ref[0][e]));
      }
      for (int r = 0; r < rounds; ++r)
        for (auto& var : v) var.seconds.push_back(measure([&] { return var.launch(args); }, o).median_s);
      // The best fixed kernel is one kernel, the fixed variant with the lowest median over the
      // rounds, compared round by round. (The fastest fixed variant of each round instead was a
      // min of four noisy times against one: an exact tie, adaptive forced to CSR-only, read 0.96x.)
      std::size_t best = 0;
      for (std::size_t i = 1; i + 1 < v.size(); ++i)
        if (median_of(v[i].seconds) < median_of(v[best].seconds)) best = i;
      std::vector<double> ratio;
      for (int r = 0; r < rounds; ++r) ratio.push_back(v[best].seconds[r] / v.back().seconds[r]);
      // SOL: the problem's FLOPs and fewest bytes (the structure included) at adaptive's median,
      // against the roof of the level its bytes fit (hot: the inputs stay in cache between runs).
      const double sol = roofline(roofs, DType::fp32, problem->flops(sizes), problem->bytes(sizes, DType::fp32),
                                  median_of(v[4].seconds), 0, /*hot=*/true).sol_fraction;
      fmt::print("| {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.1f} | {} | {} |\n", graph,
                 kind == 0 ? "GCN" : "mean", a.nnz(), median_of(v[0].seconds) * 1e3, median_of(v[1].seconds) * 1e3,
                 median_of(v[2].seconds) * 1e3, median_of(v[3].seconds) * 1e3, median_of(v[4].seconds) * 1e3, 100 * sol,
                 bench::ratio_cell(ratio), bench::load_average());
    }
  }
  fmt::print("({} rounds; each round times the five in turn, median of its samples; ratio = the best fixed kernel's (the "
             "lowest median of the four) time / adaptive's, per round, median (min..max): > 1 adaptive beats every fixed kernel; ms columns are "
             "medians over rounds; load = 1-minute load average)\n", rounds);
  return 0;
}
