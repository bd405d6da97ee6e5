// kforge's spmspv (kernels/sparse/, cpu backend, default parameters) against SuiteSparse:
// GraphBLAS's GrB_mxv with a sparse vector (plus-times; A held by column, the form GraphBLAS
// pushes a sparse vector through; all cores) and Eigen's SparseMatrix times SparseVector (the
// problem's baseline; one thread), at vector densities 0.1-10%.
//
// Each shape (M = K, uniform pattern at a sparsity, XNNZ = density * K) is first verified
// (quick protocol at the shape itself), and GraphBLAS's result checked against kforge's: the
// same entries (its nvals equals the count of y_mask's ones) and values within 1e-4 relative.
// Then `--rounds` rounds, each timing kforge beside each peer in alternation (measure_pair).
// Ratio per round = peer median / kforge median (> 1: kforge faster); median over rounds with
// its spread (min..max), kforge's SOL fraction (the columns' structure counts) and the load.
// kforge writes y and y_mask over all M rows (its result format, see the family README);
// GraphBLAS writes only the result's entries. CPU timings are CPU timings.
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

enum { kColPtr, kRowIdx, kValues, kXIdx, kXVal };

void grb(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS) throw std::runtime_error(fmt::format("GraphBLAS {} failed: {}", what, static_cast<int>(info)));
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// GrB_mxv on the instance's A (held by column) and sparse x, prepared once; each call computes w = A x.
struct GraphBlasSpmspv {
  GrB_Matrix A = nullptr;
  GrB_Vector u = nullptr, w = nullptr;
  explicit GraphBlasSpmspv(const Instance& in) {
    const auto M = static_cast<GrB_Index>(in.sizes.at("M")), K = static_cast<GrB_Index>(in.sizes.at("K"));
    const auto xnnz = static_cast<GrB_Index>(in.sizes.at("XNNZ"));
    const auto &cp = in.tensors[kColPtr], &ri = in.tensors[kRowIdx], &v = in.tensors[kValues];
    std::vector<GrB_Index> I, J;
    std::vector<float> X;
    for (GrB_Index j = 0; j < K; ++j)
      for (auto p = static_cast<std::int64_t>(cp[j]); p < cp[j + 1]; ++p) {
        I.push_back(static_cast<GrB_Index>(ri[p]));
        J.push_back(j);
        X.push_back(static_cast<float>(v[p]));
      }
    grb(GrB_Matrix_new(&A, GrB_FP32, M, K), "new A");
    grb(GxB_Matrix_Option_set(A, GxB_FORMAT, GxB_BY_COL), "A by column");
    grb(GrB_Matrix_build_FP32(A, I.data(), J.data(), X.data(), X.size(), GrB_PLUS_FP32), "build A");
    std::vector<GrB_Index> ui(xnnz);
    std::vector<float> ux(xnnz);
    for (GrB_Index q = 0; q < xnnz; ++q)
      ui[q] = static_cast<GrB_Index>(in.tensors[kXIdx][q]), ux[q] = static_cast<float>(in.tensors[kXVal][q]);
    grb(GrB_Vector_new(&u, GrB_FP32, K), "new u");
    grb(GxB_Vector_Option_set(u, GxB_SPARSITY_CONTROL, GxB_SPARSE), "u sparse");
    grb(GrB_Vector_build_FP32(u, ui.data(), ux.data(), xnnz, GrB_PLUS_FP32), "build u");
    grb(GrB_Vector_new(&w, GrB_FP32, M), "new w");
    GrB_Matrix_wait(A, GrB_MATERIALIZE);
    GrB_Vector_wait(u, GrB_MATERIALIZE);
  }
  void operator()() {
    grb(GrB_mxv(w, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, A, u, nullptr), "mxv");
    GrB_Vector_wait(w, GrB_MATERIALIZE);
  }
  ~GraphBlasSpmspv() {
    GrB_Matrix_free(&A);
    GrB_Vector_free(&u);
    GrB_Vector_free(&w);
  }
};

struct Row {
  Sizes sizes;
  double sparsity, density;
  std::vector<double> kf_s, grb_r, eigen_r;
  std::string load;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge spmspv vs GraphBLAS GrB_mxv (sparse vector) and Eigen, CPU timings"};
  std::vector<std::int64_t> rows{4096, 16384};
  std::vector<double> sparsities{0.99, 0.999}, densities{0.001, 0.01, 0.1};
  int rounds = 3, threads = 0;
  double seconds = 0.5;
  std::vector<std::string> param_text;
  app.add_option("--rows", rows, "M = K")->delimiter(',')->capture_default_str();
  app.add_option("--sparsity", sparsities, "of A")->delimiter(',')->capture_default_str();
  app.add_option("--density", densities, "of x: XNNZ = density * K (at least 1)")->delimiter(',')->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds per shape")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per pair per round")->capture_default_str();
  app.add_option("--threads", threads, "threads for kforge and GraphBLAS (0: all cores)")->capture_default_str();
  app.add_option("--param", param_text, "NAME=VALUE overrides of the cpu kernel's defaults");
  CLI11_PARSE(app, argc, argv);

  grb(GrB_init(GrB_NONBLOCKING), "init");
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, nthreads);
  auto backend = make_backend("cpu", {.threads = threads});
  const auto problem = find_problem("spmspv");
  const ParamValues overrides = bench::parse_params(param_text);
  fmt::print(stderr, "cpu: {}\n", backend->device());
  MeasureOptions o;
  o.min_repetitions = 5;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;
  const Scalars uniform{{"pattern", 0}};
  std::string ptext;

  std::vector<Row> table;
  for (const auto M : rows)
    for (const double sp : sparsities)
      for (const double dens : densities) {
        const auto nnz = std::max<std::int64_t>(1, static_cast<std::int64_t>((1 - sp) * M * M));
        const auto xnnz = std::max<std::int64_t>(1, static_cast<std::int64_t>(dens * M));
        const Sizes sizes = problem->resolve_sizes({{"M", M}, {"K", M}, {"NNZ", nnz}, {"XNNZ", xnnz}});
        problem->check_sizes(sizes);
        fmt::print(stderr, "  M=K={} sparsity {} x density {}: verifying ...\n", M, sp, dens);
        bench::verify_quick(*backend, "spmspv", sizes, uniform, overrides, threads);
        const Instance in = problem->make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, 1, uniform);
        const auto kernel = bench::prepare(*backend, *problem, sizes, overrides);
        ptext = kernel.params_text();
        std::vector<std::unique_ptr<Buffer>> b;
        for (int t = 0; t < 5; ++t) b.push_back(bench::upload(*backend, *problem, in, t));
        auto y = bench::upload(*backend, {}, M), mask = bench::upload(*backend, {}, M);
        std::vector<Arg> args;
        for (auto& buf : b) args.push_back(Arg::buf(*buf));
        args.push_back(Arg::buf(*y));
        args.push_back(Arg::buf(*mask));
        for (const auto v : {M, M, nnz, xnnz}) args.push_back(Arg::i(static_cast<std::int32_t>(v)));
        args.push_back(Arg::f(0.0f));
        const auto kernel_once = [&] { return kernel(args); };
        GraphBlasSpmspv g(in);
        // The same result: GraphBLAS's entries are y_mask's ones, with y's values.
        kernel_once();
        g();
        const auto yv = bench::download(*backend, *y, M), mv = bench::download(*backend, *mask, M);
        GrB_Index nvals = 0;
        grb(GrB_Vector_nvals(&nvals, g.w), "nvals");
        std::vector<GrB_Index> wi(nvals);
        std::vector<float> wx(nvals);
        grb(GrB_Vector_extractTuples_FP32(wi.data(), wx.data(), &nvals, g.w), "extract");
        const auto ones = std::count(mv.begin(), mv.end(), 1.0f);
        bool same = static_cast<std::int64_t>(nvals) == ones;
        for (GrB_Index k = 0; same && k < nvals; ++k)
          same = mv[wi[k]] == 1.0f && std::fabs(yv[wi[k]] - wx[k]) <= 1e-4 * (1 + std::fabs(wx[k]));
        if (!same) {
          fmt::print(stderr, "GraphBLAS and kforge disagree (GraphBLAS {} entries, kforge {})\n", nvals, ones);
          return 1;
        }
        auto eigen = problem->baseline(in, threads);
        Row row{sizes, sp, dens, {}, {}, {}, bench::load_average()};
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
  fmt::print("spmspv, uniform pattern, M = K; CPU timings on {} thread(s)\n", nthreads);
  fmt::print("| M=K | A sparsity | x density | XNNZ | kforge us | SOL% | vs GraphBLAS mxv | vs Eigen (1 thread) | load |\n");
  fmt::print("|---:|---:|---:|---:|---:|---:|---|---|---:|\n");
  for (const auto& r : table) {
    const double k = median_of(r.kf_s);
    const double sol =
        roofline(roofs, DType::fp32, problem->flops(r.sizes), problem->bytes(r.sizes, DType::fp32), k, 0, /*hot=*/true).sol_fraction;
    fmt::print("| {} | {:.1f}% | {:.1f}% | {} | {:.1f} | {:.1f} | {} | {} | {} |\n", r.sizes.at("M"), 100 * r.sparsity,
               100 * r.density, r.sizes.at("XNNZ"), k * 1e6, 100 * sol, bench::ratio_cell(r.grb_r), bench::ratio_cell(r.eigen_r), r.load);
  }
  fmt::print("({} rounds; ratio = peer median / kforge median per round, > 1: kforge faster; median (min..max); "
             "load = 1-minute load average; kernel parameters {})\n", rounds, ptext);
  GrB_finalize();
  return 0;
}
