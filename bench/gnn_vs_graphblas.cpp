// kforge's gnn_aggregate (kernels/sparse/, cpu backend, default parameters) against
// SuiteSparse:GraphBLAS computing the same aggregation the way a GraphBLAS user does: the
// normalized adjacency built once as a GrB_Matrix (by row; its weights are a property of the
// graph: GCN's D^-1/2 (A + I) D^-1/2, or the mean's diag(1/len) A), then GrB_mxm (plus-times)
// with H held full, every call; all cores or --threads. Eigen's SparseMatrix x dense (the
// problem's baseline, one thread) beside it.
//
// Each shape (M nodes, uniform pattern at `--degree` edges a node, N features, kind) is first
// verified (quick protocol at the shape itself); then `--rounds` rounds timing kforge beside each
// peer in alternation (measure_pair). Ratio per round = peer median / kforge median (> 1: kforge
// faster); median over rounds with its spread (min..max), kforge's SOL fraction and the load.
// CPU timings are CPU timings.
extern "C" {  // GraphBLAS.h declares C functions without a C++ guard
#include <GraphBLAS.h>
}

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

void grb(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS) throw std::runtime_error(fmt::format("GraphBLAS {} failed: {}", what, static_cast<int>(info)));
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The normalized adjacency (as gnn_aggregate defines it) and H in GraphBLAS; each call: out = A H.
struct GraphBlasGnn {
  GrB_Matrix A = nullptr, H = nullptr, out = nullptr;
  GraphBlasGnn(const Instance& in, bool gcn) {
    const auto M = static_cast<GrB_Index>(in.sizes.at("M")), N = static_cast<GrB_Index>(in.sizes.at("N"));
    const auto &rp = in.tensors[0], &ci = in.tensors[1], &h = in.tensors[2];
    std::vector<GrB_Index> I, J;
    std::vector<float> X;
    for (GrB_Index r = 0; r < M; ++r) {
      const double len_r = rp[r + 1] - rp[r];
      if (gcn) I.push_back(r), J.push_back(r), X.push_back(static_cast<float>(1 / (1 + len_r)));
      for (auto p = static_cast<std::int64_t>(rp[r]); p < rp[r + 1]; ++p) {
        const auto c = static_cast<GrB_Index>(ci[p]);
        const double len_c = rp[c + 1] - rp[c];
        I.push_back(r);
        J.push_back(c);
        X.push_back(static_cast<float>(gcn ? 1 / std::sqrt((1 + len_r) * (1 + len_c)) : 1 / len_r));
      }
    }
    grb(GrB_Matrix_new(&A, GrB_FP32, M, M), "new A");
    grb(GxB_Matrix_Option_set(A, GxB_FORMAT, GxB_BY_ROW), "A by row");
    grb(GrB_Matrix_build_FP32(A, I.data(), J.data(), X.data(), X.size(), GrB_PLUS_FP32), "build A");
    grb(GrB_Matrix_new(&H, GrB_FP32, M, N), "new H");
    grb(GxB_Matrix_Option_set(H, GxB_FORMAT, GxB_BY_ROW), "H by row");
    grb(GxB_Matrix_Option_set(H, GxB_SPARSITY_CONTROL, GxB_FULL), "H full");
    std::vector<GrB_Index> hi(M * N), hj(M * N);
    std::vector<float> hx(M * N);
    for (GrB_Index i = 0; i < M * N; ++i) hi[i] = i / N, hj[i] = i % N, hx[i] = static_cast<float>(h[i]);
    grb(GrB_Matrix_build_FP32(H, hi.data(), hj.data(), hx.data(), hx.size(), GrB_PLUS_FP32), "build H");
    grb(GrB_Matrix_new(&out, GrB_FP32, M, N), "new out");
    grb(GxB_Matrix_Option_set(out, GxB_FORMAT, GxB_BY_ROW), "out by row");
    GrB_Matrix_wait(A, GrB_MATERIALIZE);
    GrB_Matrix_wait(H, GrB_MATERIALIZE);
  }
  void operator()() {
    grb(GrB_mxm(out, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, A, H, nullptr), "mxm");
    GrB_Matrix_wait(out, GrB_MATERIALIZE);
  }
  ~GraphBlasGnn() {
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&H);
    GrB_Matrix_free(&out);
  }
};

struct Row {
  Sizes sizes;
  int kind;
  std::vector<double> kf_s, grb_r, eigen_r;
  std::string load;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge gnn_aggregate vs GraphBLAS (normalized adjacency x H) and Eigen, CPU timings"};
  std::vector<std::int64_t> nodes{4096, 16384}, widths{64};
  std::vector<int> kinds{0, 1};
  std::int64_t degree = 16;
  int rounds = 3, threads = 0;
  double seconds = 0.5;
  app.add_option("--nodes", nodes, "M")->delimiter(',')->capture_default_str();
  app.add_option("--cols", widths, "N, features")->delimiter(',')->capture_default_str();
  app.add_option("--kinds", kinds, "0 GCN, 1 mean")->delimiter(',')->capture_default_str();
  app.add_option("--degree", degree, "edges a node (NNZ = degree * M)")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds per shape")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per pair per round")->capture_default_str();
  app.add_option("--threads", threads, "threads for kforge and GraphBLAS (0: all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  grb(GrB_init(GrB_NONBLOCKING), "init");
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, nthreads);
  auto backend = make_backend("cpu", {.threads = threads});
  const auto problem = find_problem("gnn_aggregate");
  fmt::print(stderr, "cpu: {}\n", backend->device());
  MeasureOptions o;
  o.min_repetitions = 5;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;
  std::string ptext;

  std::vector<Row> table;
  for (const auto M : nodes)
    for (const auto N : widths)
      for (const int kind : kinds) {
        const Sizes sizes = problem->resolve_sizes({{"M", M}, {"N", N}, {"NNZ", degree * M}});
        problem->check_sizes(sizes);
        const Scalars scalars{{"pattern", 0}, {"kind", kind}};
        fmt::print(stderr, "  M={} N={} kind {}: verifying ...\n", M, N, kind);
        bench::verify_quick(*backend, "gnn_aggregate", sizes, scalars, {}, threads);
        const Instance in = problem->make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, 1, scalars);
        const auto kernel = bench::prepare(*backend, *problem, sizes);
        ptext = kernel.params_text();
        std::vector<std::unique_ptr<Buffer>> b;
        for (int t = 0; t < 3; ++t) b.push_back(bench::upload(*backend, *problem, in, t));
        auto out = bench::upload(*backend, {}, M * N);
        const std::vector<Arg> args{Arg::buf(*b[0]), Arg::buf(*b[1]), Arg::buf(*b[2]), Arg::buf(*out),
                                    Arg::i(static_cast<std::int32_t>(M)), Arg::i(static_cast<std::int32_t>(N)),
                                    Arg::i(static_cast<std::int32_t>(degree * M)), Arg::f(0.0f),
                                    Arg::f(static_cast<float>(kind))};
        const auto kernel_once = [&] { return kernel(args); };
        GraphBlasGnn g(in, kind == 0);
        auto eigen = problem->baseline(in, threads);
        Row row{sizes, kind, {}, {}, {}, bench::load_average()};
        for (int r = 0; r < rounds; ++r) {
          const PairTiming pg = measure_pair(kernel_once, [&] { return seconds_of([&] { g(); }); }, o);
          const PairTiming pe = measure_pair(kernel_once, [&] { return seconds_of(eigen); }, o);
          row.kf_s.push_back(pg.a.median_s);
          row.grb_r.push_back(pg.b.median_s / pg.a.median_s);
          row.eigen_r.push_back(pe.b.median_s / pe.a.median_s);
        }
        table.push_back(std::move(row));
      }

  const Ceilings roofs = ceilings(*backend);
  fmt::print("gnn_aggregate, uniform pattern, {} edges a node; CPU timings on {} thread(s)\n", degree, nthreads);
  fmt::print("| M | N | kind | kforge ms | SOL% | vs GraphBLAS mxm | vs Eigen (1 thread) | load |\n");
  fmt::print("|---:|---:|---|---:|---:|---|---|---:|\n");
  for (const auto& r : table) {
    const double k = median_of(r.kf_s);
    const double sol =
        roofline(roofs, DType::fp32, problem->flops(r.sizes), problem->bytes(r.sizes, DType::fp32), k, 0, /*hot=*/true).sol_fraction;
    fmt::print("| {} | {} | {} | {:.3f} | {:.1f} | {} | {} | {} |\n", r.sizes.at("M"), r.sizes.at("N"),
               r.kind == 0 ? "GCN" : "mean", k * 1e3, 100 * sol, bench::ratio_cell(r.grb_r), bench::ratio_cell(r.eigen_r), r.load);
  }
  fmt::print("({} rounds; ratio = peer median / kforge median per round, > 1: kforge faster; median (min..max); "
             "load = 1-minute load average; GraphBLAS and Eigen get the normalized adjacency built beforehand, "
             "kforge computes the weights every call; kernel parameters {})\n", rounds, ptext);
  GrB_finalize();
  return 0;
}
