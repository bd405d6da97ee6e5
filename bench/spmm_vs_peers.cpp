// kforge's spmm (kernels/sparse/, cpu backend) against the peers a user would pick for
// C = A * B with A sparse (CSR) and B dense: SuiteSparse:GraphBLAS's GrB_mxm (plus-times, B and C
// held full, all cores), Eigen's SparseMatrix (the problem's baseline; one thread) and dense
// OpenBLAS sgemm on A stored dense (all cores), to find the sparsity at which sparse wins.
// The scipy.sparse column comes from bench/spmm_vs_scipy.py (not in this slice).
//
// Each shape (M = K rows and columns, uniform pattern at a sparsity, N dense columns) is first
// verified (quick protocol at the shape itself); then `--rounds` rounds, each timing kforge
// beside each peer in alternation on the same inputs (measure_pair). Ratio per round = peer
// median / kforge median; the table shows the median over rounds, its spread (min..max), the
// SOL fraction (the sparse structure's bytes count) and the 1-minute load average.
// CPU timings are CPU timings: the figures describe this machine. `--clock cpu` (one thread
// only) times every side by the calling thread's CPU time instead of the wall clock, so that on
// a loaded host another process's time slices are not counted (its cache pollution still is).
extern "C" {  // GraphBLAS.h declares C functions without a C++ guard
#include <GraphBLAS.h>
}
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/measure.hpp"
#include "kforge/problem.hpp"
#include "tensor_upload.hpp"

namespace {

using namespace kforge;

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

void grb(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS) throw std::runtime_error(fmt::format("GraphBLAS {} failed: {}", what, static_cast<int>(info)));
}

bool cpu_clock = false;  // --clock cpu: the calling thread's CPU time

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double seconds_of(const std::function<void()>& f) {
  if (cpu_clock) {
    const double c0 = thread_cpu_s();
    f();
    return thread_cpu_s() - c0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// GrB_mxm on the instance's CSR and B, prepared once; each call computes C = A * B.
struct GraphBlasSpmm {
  GrB_Matrix A = nullptr, B = nullptr, C = nullptr;
  GraphBlasSpmm(const Instance& in) {
    const auto M = static_cast<GrB_Index>(in.sizes.at("M")), K = static_cast<GrB_Index>(in.sizes.at("K")),
               N = static_cast<GrB_Index>(in.sizes.at("N"));
    const auto &rp = in.tensors[0], &ci = in.tensors[1], &v = in.tensors[2], &b = in.tensors[3];
    std::vector<GrB_Index> I, J;
    std::vector<float> X;
    for (GrB_Index r = 0; r < M; ++r)
      for (auto p = static_cast<std::int64_t>(rp[r]); p < rp[r + 1]; ++p) {
        I.push_back(r);
        J.push_back(static_cast<GrB_Index>(ci[p]));
        X.push_back(static_cast<float>(v[p]));
      }
    grb(GrB_Matrix_new(&A, GrB_FP32, M, K), "new A");
    grb(GxB_Matrix_Option_set(A, GxB_FORMAT, GxB_BY_ROW), "A by row");
    grb(GrB_Matrix_build_FP32(A, I.data(), J.data(), X.data(), X.size(), GrB_PLUS_FP32), "build A");
    grb(GrB_Matrix_new(&B, GrB_FP32, K, N), "new B");
    grb(GxB_Matrix_Option_set(B, GxB_FORMAT, GxB_BY_ROW), "B by row");
    grb(GxB_Matrix_Option_set(B, GxB_SPARSITY_CONTROL, GxB_FULL), "B full");
    std::vector<GrB_Index> bi(K * N), bj(K * N);
    std::vector<float> bx(K * N);
    for (GrB_Index i = 0; i < K * N; ++i) bi[i] = i / N, bj[i] = i % N, bx[i] = static_cast<float>(b[i]);
    grb(GrB_Matrix_build_FP32(B, bi.data(), bj.data(), bx.data(), bx.size(), GrB_PLUS_FP32), "build B");
    grb(GrB_Matrix_new(&C, GrB_FP32, M, N), "new C");
    grb(GxB_Matrix_Option_set(C, GxB_FORMAT, GxB_BY_ROW), "C by row");
    GrB_Matrix_wait(A, GrB_MATERIALIZE);
    GrB_Matrix_wait(B, GrB_MATERIALIZE);
  }
  void operator()() {
    grb(GrB_mxm(C, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, A, B, nullptr), "mxm");
    GrB_Matrix_wait(C, GrB_MATERIALIZE);
  }
  ~GraphBlasSpmm() {
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&B);
    GrB_Matrix_free(&C);
  }
};

struct Row {
  Sizes sizes;
  double sparsity;
  std::vector<double> kf_s, grb_r, eigen_r, dense_r;
  std::string load;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge spmm vs GraphBLAS, Eigen and dense OpenBLAS sgemm, CPU timings"};
  std::vector<std::int64_t> rows{1024, 4096}, widths{64, 256};
  std::vector<double> sparsities{0.7, 0.9, 0.99};
  int rounds = 3, threads = 0;
  double seconds = 1.0;
  std::vector<std::string> param_text;
  app.add_option("--rows", rows, "M = K")->delimiter(',')->capture_default_str();
  app.add_option("--cols", widths, "N, dense columns")->delimiter(',')->capture_default_str();
  app.add_option("--sparsity", sparsities)->delimiter(',')->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds per shape")->capture_default_str();
  app.add_option("--seconds", seconds, "most seconds of sampling per pair per round")->capture_default_str();
  app.add_option("--threads", threads, "threads for kforge, GraphBLAS and OpenBLAS (0: all cores)")->capture_default_str();
  app.add_option("--param", param_text, "NAME=VALUE overrides of the cpu kernel's defaults");
  std::string clock = "wall";
  app.add_option("--clock", clock, "wall, or cpu: every side timed by the calling thread's CPU time (--threads 1)")
      ->check(CLI::IsMember({"wall", "cpu"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  cpu_clock = clock == "cpu";
  if (cpu_clock && threads != 1) {
    fmt::print(stderr, "--clock cpu times the calling thread only: use it with --threads 1\n");
    return 2;
  }

  grb(GrB_init(GrB_NONBLOCKING), "init");
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, nthreads);
  openblas_set_num_threads(nthreads);
  auto backend = make_backend("cpu", {.threads = threads});
  const auto problem = find_problem("spmm");
  const KernelSpec spec = library_kernel(*problem, Lang::cpp);
  ParamValues overrides;
  for (const auto& s : param_text) overrides[s.substr(0, s.find('='))] = std::stoll(s.substr(s.find('=') + 1));
  const ParamValues params = spec.resolve(overrides);
  std::string ptext;
  for (const auto& [k, v] : params) ptext += fmt::format("{}{}={}", ptext.empty() ? "" : ",", k, v);
  fmt::print(stderr, "cpu: {}\nkernel parameters: {}\n", backend->device(), ptext);
  const Scalars uniform{{"pattern", 0}};
  MeasureOptions o;
  o.min_repetitions = 3;
  o.min_time_s = seconds / 2;
  o.max_time_s = seconds;

  std::vector<Row> table;
  for (const auto M : rows)
    for (const auto N : widths)
      for (const double sp : sparsities) {
        const auto nnz = std::max<std::int64_t>(1, static_cast<std::int64_t>((1 - sp) * M * M));
        const Sizes sizes = problem->resolve_sizes({{"M", M}, {"K", M}, {"N", N}, {"NNZ", nnz}});
        problem->check_sizes(sizes);
        fmt::print(stderr, "  M=K={} N={} sparsity {}: verifying ...\n", M, N, sp);
        EvalRequest req;
        req.problem = "spmm";
        req.kernel = spec;
        req.sizes = sizes;
        req.scalars = req.verify.scalars = uniform;
        req.params = overrides;
        req.backend_options.threads = threads;
        req.verify.thorough = false;
        req.verify.trials = 1;
        const EvalResult e = evaluate(req, *backend);
        if (!e.passed()) {
          fmt::print(stderr, "verification failed: {}\n", e.error);
          return 1;
        }
        const Instance in = problem->make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, 1, uniform);
        std::vector<std::unique_ptr<Buffer>> bufs;
        std::vector<Arg> args;
        for (std::size_t t = 0; t < in.tensors.size(); ++t) {
          bufs.push_back(bench::upload(*backend, *problem, in, t));
          args.push_back(Arg::buf(*bufs.back()));
        }
        for (const auto& n : problem->size_names()) args.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(n))));
        args.push_back(Arg::f(0.0f));  // pattern, unread by the kernel
        Defines defines;
        for (const auto& [k, v] : params) defines.emplace_back(k, std::to_string(v));
        defines.emplace_back("KF_DTYPE_FP32", "1");
        auto module = backend->compile(spec.source, spec.entry, defines);
        const LaunchGeometry geometry = spec.geometry(params, sizes);
        // With --clock cpu the launch runs on this thread (one thread): its CPU time is the kernel's.
        const auto kernel_once = [&] {
          if (!cpu_clock) return backend->run(*module, geometry, args);
          const double c0 = thread_cpu_s();
          backend->run(*module, geometry, args);
          return thread_cpu_s() - c0;
        };
        GraphBlasSpmm g(in);
        auto eigen = problem->baseline(in, threads);
        // Dense A (M,K) for sgemm.
        std::vector<float> dense(M * M, 0.0f), b(in.tensors[3].begin(), in.tensors[3].end()), c(M * N);
        for (std::int64_t r = 0; r < M; ++r)
          for (auto p = static_cast<std::int64_t>(in.tensors[0][r]); p < in.tensors[0][r + 1]; ++p)
            dense[r * M + static_cast<std::int64_t>(in.tensors[1][p])] = static_cast<float>(in.tensors[2][p]);
        const auto sgemm = [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                      static_cast<int>(M), 1.0f, dense.data(), static_cast<int>(M), b.data(), static_cast<int>(N),
                      0.0f, c.data(), static_cast<int>(N));
        };
        Row row{sizes, sp, {}, {}, {}, {}, load_average()};
        for (int r = 0; r < rounds; ++r) {
          const PairTiming pg = measure_pair(kernel_once, [&] { return seconds_of([&] { g(); }); }, o);
          const PairTiming pe = measure_pair(kernel_once, [&] { return seconds_of(eigen); }, o);
          const PairTiming pd = measure_pair(kernel_once, [&] { return seconds_of(sgemm); }, o);
          row.kf_s.push_back(pg.a.median_s);
          row.grb_r.push_back(pg.b.median_s / pg.a.median_s);
          row.eigen_r.push_back(pe.b.median_s / pe.a.median_s);
          row.dense_r.push_back(pd.b.median_s / pd.a.median_s);
        }
        table.push_back(std::move(row));
      }

  const Ceilings roofs = ceilings(*backend);
  fmt::print("spmm, uniform pattern, M = K; CPU timings on {} thread(s), {} clock\n", nthreads, clock);
  fmt::print("| M=K | N | sparsity | kforge ms | SOL% | vs GraphBLAS | vs Eigen (1 thread) | vs dense sgemm | load |\n");
  fmt::print("|---:|---:|---:|---:|---:|---|---|---|---:|\n");
  auto cell = [](const std::vector<double>& v) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return fmt::format("{:.2f}x ({:.2f}..{:.2f})", median_of(v), *lo, *hi);
  };
  for (const auto& r : table) {
    const double k = median_of(r.kf_s);
    const double sol = roofline(roofs, DType::fp32, problem->flops(r.sizes), problem->bytes(r.sizes, DType::fp32), k, 0, /*hot=*/true).sol_fraction;
    fmt::print("| {} | {} | {:.0f}% | {:.3f} | {:.1f} | {} | {} | {} | {} |\n", r.sizes.at("M"), r.sizes.at("N"),
               100 * r.sparsity, k * 1e3, 100 * sol, cell(r.grb_r), cell(r.eigen_r), cell(r.dense_r), r.load);
  }
  fmt::print("({} rounds; ratio = peer median / kforge median per round, > 1: kforge faster; median (min..max); "
             "load = 1-minute load average; kernel parameters {})\n", rounds, ptext);
  GrB_finalize();
  return 0;
}
