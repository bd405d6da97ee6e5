// kforge's spdnn (kernels/sparse/, cpu backend, default parameters) against SuiteSparse:GraphBLAS
// running the same network the way the GraphChallenge's GraphBLAS reference does: Y held as a
// sparse GrB_Matrix (by row), and per layer
//   Y = Y W_l               GrB_mxm, plus-times
//   Y = Y ⊕ diag(b_l)       GrB_mxm, plus-plus: b_j added to the entries Y has (the challenge's way;
//                           the same as adding it everywhere because every b_j <= 0 here)
//   Y = select(Y > 0)       GrB_select VALUEGT 0: the ReLU, dropping the zeros
//   Y = min(Y, 32)          GrB_apply MIN bind2nd: the clip
// and the categories as the rows of Y that keep an entry (a row reduction). Every timed call
// starts from a copy of Y0 (GrB_Matrix_dup) and runs all L layers; the layers W_l (by row) and
// the bias diagonals are built once beforehand.
//
// Each shape (B inputs, N neurons, K connections, L layers; the problem's generator, trial 0:
// binary inputs, every fifth row empty) is first verified (quick protocol); GraphBLAS's result
// is checked against kforge's (categories equal, activations within 1e-3 relative). Then
// `--rounds` rounds timing kforge beside GraphBLAS in alternation (measure_pair). Edges per
// second = B x L x N x K / time (the challenge's rate: inputs times the network's connections).
// Ratio per round = GraphBLAS median / kforge median (> 1: kforge faster); median over rounds
// with its spread (min..max), kforge's SOL fraction and the load. CPU timings are CPU timings.
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

enum { kY0, kWIdx, kWVal, kBias };

void grb(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS) throw std::runtime_error(fmt::format("GraphBLAS {} failed: {}", what, static_cast<int>(info)));
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

GrB_Matrix by_row(GrB_Index rows, GrB_Index cols, const std::vector<GrB_Index>& I, const std::vector<GrB_Index>& J,
                  const std::vector<float>& X) {
  GrB_Matrix m = nullptr;
  grb(GrB_Matrix_new(&m, GrB_FP32, rows, cols), "new");
  grb(GxB_Matrix_Option_set(m, GxB_FORMAT, GxB_BY_ROW), "by row");
  grb(GrB_Matrix_build_FP32(m, I.data(), J.data(), X.data(), X.size(), GrB_PLUS_FP32), "build");
  GrB_Matrix_wait(m, GrB_MATERIALIZE);
  return m;
}

// The network in GraphBLAS; each call runs it on a fresh copy of Y0 into `y`.
struct GraphBlasDnn {
  GrB_Matrix y0 = nullptr, y = nullptr;
  std::vector<GrB_Matrix> w, bias;
  GrB_Index B, N;
  explicit GraphBlasDnn(const Instance& in) {
    B = static_cast<GrB_Index>(in.sizes.at("B")), N = static_cast<GrB_Index>(in.sizes.at("N"));
    const auto K = static_cast<GrB_Index>(in.sizes.at("K")), L = static_cast<GrB_Index>(in.sizes.at("L"));
    std::vector<GrB_Index> I, J;
    std::vector<float> X;
    for (GrB_Index e = 0; e < B * N; ++e)
      if (in.tensors[kY0][e] != 0) I.push_back(e / N), J.push_back(e % N), X.push_back(static_cast<float>(in.tensors[kY0][e]));
    y0 = by_row(B, N, I, J, X);
    for (GrB_Index l = 0; l < L; ++l) {
      I.clear(), J.clear(), X.clear();
      for (GrB_Index j = 0; j < N; ++j)
        for (GrB_Index t = 0; t < K; ++t) {  // the pulled lists: input i feeds output j
          I.push_back(static_cast<GrB_Index>(in.tensors[kWIdx][(l * N + j) * K + t]));
          J.push_back(j);
          X.push_back(static_cast<float>(in.tensors[kWVal][(l * N + j) * K + t]));
        }
      w.push_back(by_row(N, N, I, J, X));
      I.clear(), J.clear(), X.clear();
      for (GrB_Index j = 0; j < N; ++j) I.push_back(j), J.push_back(j), X.push_back(static_cast<float>(in.tensors[kBias][l * N + j]));
      bias.push_back(by_row(N, N, I, J, X));
    }
  }
  void operator()() {
    if (y) GrB_Matrix_free(&y);
    grb(GrB_Matrix_dup(&y, y0), "dup");
    for (std::size_t l = 0; l < w.size(); ++l) {
      grb(GrB_mxm(y, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, y, w[l], nullptr), "mxm");
      grb(GrB_mxm(y, nullptr, nullptr, GxB_PLUS_PLUS_FP32, y, bias[l], nullptr), "bias");
      grb(GrB_Matrix_select_FP32(y, nullptr, nullptr, GrB_VALUEGT_FP32, y, 0.0f, nullptr), "relu");
      grb(GrB_Matrix_apply_BinaryOp2nd_FP32(y, nullptr, nullptr, GrB_MIN_FP32, y, 32.0f, nullptr), "clip");
    }
    GrB_Matrix_wait(y, GrB_MATERIALIZE);
  }
  // Y as dense row-major floats, and the categories (rows with an entry).
  void result(std::vector<float>& dense, std::vector<float>& cat) const {
    GrB_Index n = 0;
    GrB_Matrix_nvals(&n, y);
    std::vector<GrB_Index> I(n), J(n);
    std::vector<float> X(n);
    grb(GrB_Matrix_extractTuples_FP32(I.data(), J.data(), X.data(), &n, y), "extract");
    dense.assign(B * N, 0.0f);
    cat.assign(B, 0.0f);
    for (GrB_Index e = 0; e < n; ++e) dense[I[e] * N + J[e]] = X[e], cat[I[e]] = X[e] > 0 ? 1.0f : cat[I[e]];
  }
  ~GraphBlasDnn() {
    GrB_Matrix_free(&y0);
    if (y) GrB_Matrix_free(&y);
    for (auto& m : w) GrB_Matrix_free(&m);
    for (auto& m : bias) GrB_Matrix_free(&m);
  }
};

struct Row {
  Sizes sizes;
  std::vector<double> kf_s, grb_s, ratio;
  double live_rows = 0;
  std::string load;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge spdnn vs GraphBLAS running the same sparse DNN, CPU timings"};
  std::vector<std::int64_t> neurons{1024, 4096};
  std::int64_t inputs = 2048, K = 32, L = 24;
  int rounds = 3, threads = 0;
  double seconds = 1.0;
  std::vector<std::string> params;
  app.add_option("--neurons", neurons, "N, the layer sizes")->delimiter(',')->capture_default_str();
  app.add_option("--inputs", inputs, "B, input rows")->capture_default_str();
  app.add_option("--connections", K, "K, nonzeros per row and column of each layer")->capture_default_str();
  app.add_option("--layers", L, "L")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds per shape")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per pair per round")->capture_default_str();
  app.add_option("--threads", threads, "threads for kforge and GraphBLAS (0: all cores)")->capture_default_str();
  app.add_option("--param", params, "kforge kernel parameter NAME=VALUE (repeatable)");
  CLI11_PARSE(app, argc, argv);

  grb(GrB_init(GrB_NONBLOCKING), "init");
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, nthreads);
  auto backend = make_backend("cpu", {.threads = threads});
  const auto problem = find_problem("spdnn");
  const ParamValues overrides = bench::parse_params(params);
  fmt::print(stderr, "cpu: {}\n", backend->device());
  MeasureOptions o;
  o.min_repetitions = 3;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;
  std::string ptext;

  std::vector<Row> table;
  for (const auto N : neurons) {
    const Sizes sizes = problem->resolve_sizes({{"B", inputs}, {"N", N}, {"K", K}, {"L", L}});
    problem->check_sizes(sizes);
    fmt::print(stderr, "  B={} N={} K={} L={}: verifying ...\n", inputs, N, K, L);
    bench::verify_quick(*backend, "spdnn", sizes, {}, overrides, threads);
    const Instance in = problem->make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, 0);
    const auto kernel = bench::prepare(*backend, *problem, sizes, overrides);
    ptext = kernel.params_text();
    std::vector<std::unique_ptr<Buffer>> b;
    for (int t = 0; t < 4; ++t) b.push_back(bench::upload(*backend, *problem, in, t));
    auto y = bench::upload(*backend, {}, inputs * N);
    auto cat = bench::upload(*backend, {}, inputs);
    const std::vector<Arg> args{Arg::buf(*b[0]), Arg::buf(*b[1]), Arg::buf(*b[2]), Arg::buf(*b[3]), Arg::buf(*y),
                                Arg::buf(*cat), Arg::i(static_cast<std::int32_t>(inputs)),
                                Arg::i(static_cast<std::int32_t>(N)), Arg::i(static_cast<std::int32_t>(K)),
                                Arg::i(static_cast<std::int32_t>(L))};
    const auto kernel_once = [&] { return kernel(args); };
    GraphBlasDnn g(in);
    // Same network, same answer: categories equal, activations close.
    kernel_once();
    g();
    std::vector<float> gy, gcat;
    g.result(gy, gcat);
    const auto ky = bench::download(*backend, *y, inputs * N), kcat = bench::download(*backend, *cat, inputs);
    double worst = 0;
    for (std::size_t e = 0; e < ky.size(); ++e) worst = std::max(worst, std::fabs(static_cast<double>(ky[e]) - gy[e]) / (1 + std::fabs(gy[e])));
    if (kcat != gcat || worst > 1e-3)
      throw std::runtime_error(fmt::format("GraphBLAS and kforge disagree at N={}: categories {}, worst relative "
                                           "difference {:.3g}", N, kcat == gcat ? "equal" : "differ", worst));
    Row row{sizes, {}, {}, {}, 0, bench::load_average()};
    row.live_rows = static_cast<double>(std::count(kcat.begin(), kcat.end(), 1.0f)) / static_cast<double>(inputs);
    for (int r = 0; r < rounds; ++r) {
      const PairTiming pg = measure_pair(kernel_once, [&] { return seconds_of([&] { g(); }); }, o);
      row.kf_s.push_back(pg.a.median_s);
      row.grb_s.push_back(pg.b.median_s);
      row.ratio.push_back(pg.b.median_s / pg.a.median_s);
    }
    table.push_back(std::move(row));
  }

  const Ceilings roofs = ceilings(*backend);
  fmt::print("spdnn, B={} inputs, K={} connections, L={} layers (binary inputs, every fifth row empty); "
             "CPU timings on {} thread(s)\n", inputs, K, L, nthreads);
  fmt::print("| N | live rows | kforge ms | kforge Gedges/s | GraphBLAS Gedges/s | kforge vs GraphBLAS | SOL% | load |\n");
  fmt::print("|---:|---:|---:|---:|---:|---|---:|---:|\n");
  for (const auto& r : table) {
    const double k = median_of(r.kf_s), gs = median_of(r.grb_s);
    const double edges = static_cast<double>(r.sizes.at("B")) * r.sizes.at("L") * r.sizes.at("N") * r.sizes.at("K");
    const double sol =
        roofline(roofs, DType::fp32, problem->flops(r.sizes), problem->bytes(r.sizes, DType::fp32), k, 0, /*hot=*/true).sol_fraction;
    fmt::print("| {} | {:.0f}% | {:.2f} | {:.2f} | {:.2f} | {} | {:.1f} | {} |\n", r.sizes.at("N"), 100 * r.live_rows,
               k * 1e3, edges / k * 1e-9, edges / gs * 1e-9, bench::ratio_cell(r.ratio), 100 * sol, r.load);
  }
  fmt::print("({} rounds; ratio = GraphBLAS median / kforge median per round, > 1: kforge faster; median (min..max); "
             "Gedges/s = B x L x N x K / median time; live rows = inputs whose category is 1; load = 1-minute load "
             "average; kernel parameters {})\n", rounds, ptext);
  GrB_finalize();
  return 0;
}
