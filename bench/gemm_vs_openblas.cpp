// kforge's fp32 GEMM on the cpu backend against the fp32 GEMMs a user could call instead:
// OpenBLAS's cblas_sgemm (kforge's baseline library), BLIS's bli_sgemm (Debian libblis-dev,
// opened at run time with its symbols kept local, so it never replaces OpenBLAS's BLAS in this
// process) and oneDNN's fp32 matmul (Debian libdnnl-dev, linked into this program only). C =
// A*B (alpha 1, beta 0), row-major, every contestant on the same threads.
//
// kforge runs with the spec's default parameters ("kforge default") and, with --budget N, also
// with the winner of an N-evaluation random tuning at the shape ("kforge tuned"). The default is
// verified first at every shape up to 2048^3 (`kforge verify`, quick), the tuned one by the
// tuning. Then `--rounds` rounds: in each, every contestant in turn runs at least `--min-calls`
// calls and 0.2 s, and its round figure is the median call. Ratios are per round, the
// contestant's time over kforge default's (above 1: kforge is faster), shown as the median over
// rounds (min..max); "best peer" takes, per round, the fastest of the peers. "of peak" is
// GFLOP/s over the measured fp32 FMA peak (`kforge ceilings`). CPU timings, this machine only.
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kernel_launcher.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/measure.hpp"
#include "kforge/tune.hpp"
#include "kforge/util.hpp"

#ifdef KFORGE_BENCH_WITH_DNNL
#include "dnnl_matmul.hpp"
#include "bench_host.hpp"
#endif

namespace {

using namespace kforge;
using Clock = std::chrono::steady_clock;

Sizes parse_shape(const std::string& s) {  // "1024" or "1000x1000x999"
  std::vector<std::int64_t> d;
  for (const auto& part : split(s, 'x')) d.push_back(std::stoll(part));
  if (d.size() == 1) d = {d[0], d[0], d[0]};
  if (d.size() != 3 || *std::min_element(d.begin(), d.end()) < 1)
    throw UsageError("shape '" + s + "': use N or MxNxK, each at least 1");
  return {{"M", d[0]}, {"N", d[1]}, {"K", d[2]}};
}

double round_median(const std::function<void()>& call, int min_calls) {
  std::vector<double> s;
  const auto start = Clock::now();
  while (static_cast<int>(s.size()) < min_calls || Clock::now() - start < std::chrono::milliseconds(200)) {
    const auto t0 = Clock::now();
    call();
    s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median_of(s);
}

// BLIS's typed API (blis.h: trans_t BLIS_NO_TRANSPOSE = 0, dim_t and inc_t 64-bit on x86-64),
// declared here so that blis.h and its cblas.h never meet OpenBLAS's in this program.
using BliSgemm = void (*)(int transa, int transb, std::int64_t m, std::int64_t n, std::int64_t k, const float* alpha,
                          const float* a, std::int64_t rsa, std::int64_t csa, const float* b, std::int64_t rsb,
                          std::int64_t csb, const float* beta, float* c, std::int64_t rsc, std::int64_t csc);
struct Blis {
  BliSgemm sgemm = nullptr;
  std::string why;  // why it is absent
};
Blis open_blis(int threads) {
#ifdef KFORGE_BLIS_LIBRARY
  // RTLD_LOCAL | RTLD_DEEPBIND: BLIS's own BLAS symbols (sgemm_, cblas_sgemm) stay out of the
  // global scope, and BLIS resolves its own calls to itself, not to OpenBLAS.
  void* h = dlopen(KFORGE_BLIS_LIBRARY, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) return {nullptr, std::string("dlopen ") + KFORGE_BLIS_LIBRARY + ": " + dlerror()};
  auto set_threads = reinterpret_cast<void (*)(std::int64_t)>(dlsym(h, "bli_thread_set_num_threads"));
  if (set_threads) set_threads(threads);
  auto f = reinterpret_cast<BliSgemm>(dlsym(h, "bli_sgemm"));
  return {f, f ? "" : "no bli_sgemm in " KFORGE_BLIS_LIBRARY};
#else
  (void)threads;
  return {nullptr, "libblis-dev was not found when this program was configured (tools/install-deps)"};
#endif
}

#ifdef KFORGE_BENCH_WITH_DNNL
// oneDNN's fp32 matmul on normal random inputs.
std::shared_ptr<kforge::bench::DnnlMatmul> onednn_fp32(int M, int N, int K) {
  auto m = std::make_shared<kforge::bench::DnnlMatmul>(M, N, K, dnnl::memory::data_type::f32);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (auto* t : {&m->A, &m->B}) {
    auto* p = static_cast<float*>(t->get_data_handle());
    std::generate(p, p + t->get_desc().get_size() / 4, [&] { return normal(rng); });
  }
  return m;
}
#endif

struct Contestant {
  std::string name;
  bool peer;
  std::function<void()> call;
  std::vector<double> seconds;  // per round
};

std::string params_text(const ParamValues& p) {
  std::string s;
  for (const auto& [k, v] : p) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge fp32 GEMM (default and tuned) vs OpenBLAS, BLIS and oneDNN, CPU timings"};
  std::vector<std::string> shapes{"512",          "1024",          "2048",       "4096",
                                  "1009",         "1000x1000x999", "8192x64x1024", "2048x2048x32",
                                  "257x383x129"};
  std::string params_arg;
  int budget = 0, rounds = 3, min_calls = 3, threads = 0;
  app.add_option("--shapes", shapes, "N for N^3, or MxNxK")->capture_default_str();
  app.add_option("--params", params_arg, "kforge's parameters instead of the spec's defaults, e.g. MR=12,NV=2");
  std::vector<std::string> also;
  app.add_option("--also", also,
                 "more kforge contestants, each with these parameters over the defaults, e.g. KC=512,NC=256 "
                 "(interleaved with the rest, shown against kforge default)");
  app.add_option("--budget", budget, "also tune kforge at each shape with this many evaluations (0: default only)")
      ->capture_default_str();
  bool openblas_only = false;
  app.add_flag("--openblas-only", openblas_only,
               "OpenBLAS the only peer (shorter runs for comparing kforge configurations with --also)");
  app.add_option("--rounds", rounds, "interleaved rounds per shape")->capture_default_str();
  app.add_option("--min-calls", min_calls, "calls per contestant per round, at least (and 0.2 s)")->capture_default_str();
  app.add_option("--threads", threads, "threads for every contestant (0: all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  openblas_set_num_threads(nthreads);
  // oneDNN and BLIS (Debian's OpenMP builds) take their threads from OpenMP.
  if (auto omp_set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) omp_set(nthreads);
  const Blis blis = open_blis(nthreads);
  const double peak = ceilings(*backend).flops_for(DType::fp32);
  fmt::print(stderr, "cpu: {}\n  fp32 peak {:.0f} GFLOP/s (kforge ceilings); BLIS: {}\n", backend->device(), peak * 1e-9,
             blis.sgemm ? "bli_sgemm" : blis.why);
  const ParamValues given = params_arg.empty() ? ParamValues{} : parse_assignments(params_arg);
  const std::map<std::string, double> plain{{"alpha", 1.0}, {"beta", 0.0}};

  struct Row {
    std::string shape, tuned;
    double flops;
    std::vector<Contestant> c;  // c[0]: kforge default
  };
  std::vector<Row> rows;
  for (const auto& shape : shapes) {
    const Sizes sizes = parse_shape(shape);
    const int M = static_cast<int>(sizes.at("M")), N = static_cast<int>(sizes.at("N")),
              K = static_cast<int>(sizes.at("K"));
    fmt::print(stderr, "  {} ...\n", shape);
    EvalRequest req;
    req.problem = "gemm";
    req.kernel = library_kernel(*find_problem("gemm"), Lang::cpp, sizes);
    req.sizes = sizes;
    req.params = given;
    req.backend = "cpu";
    req.backend_options.threads = threads;
    req.verify.thorough = false;
    req.verify.trials = 1;
    // The reference is a full product in double: above 2^33 multiply-adds (2048^3) it would
    // take longer than the measurement, so larger shapes rely on the same code verified below.
    if (static_cast<double>(M) * N * K > 0x1p33)
      fmt::print(stderr, "    (not verified here: above 2^33 multiply-adds)\n");
    else if (const EvalResult e = evaluate(req, *backend); !e.passed())
      throw std::runtime_error("kforge gemm failed verification at " + shape + ": " + e.error);

    Row row{shape, "", 2.0 * M * N * K, {}};
    auto kd = std::make_shared<bench::KernelLauncher>(*backend, "gemm", sizes, DType::fp32, given, plain);
    row.c.push_back({"kforge default", false, [kd] { kd->launch(); }, {}});
    if (budget > 0) {
      req.measure.max_time_s = 1.0;
      const TuneResult t = tune(req, *backend, {"random", budget, 1});
      if (t.best < 0) throw std::runtime_error("no configuration of gemm.cpu passed at " + shape);
      const ParamValues best = t.evaluations[t.best].params;
      row.tuned = params_text(best);
      auto kt = std::make_shared<bench::KernelLauncher>(*backend, "gemm", sizes, DType::fp32, best, plain);
      row.c.push_back({"kforge tuned", false, [kt] { kt->launch(); }, {}});
    }
    for (const auto& text : also) {
      ParamValues p = given;
      for (const auto& [k, v] : parse_assignments(text)) p[k] = v;
      req.params = p;
      if (static_cast<double>(M) * N * K <= 0x1p33)
        if (const EvalResult e = evaluate(req, *backend); !e.passed())
          throw std::runtime_error("kforge gemm " + text + " failed verification at " + shape + ": " + e.error);
      req.params = given;
      auto ka = std::make_shared<bench::KernelLauncher>(*backend, "gemm", sizes, DType::fp32, p, plain);
      row.c.push_back({"kforge " + text, false, [ka] { ka->launch(); }, {}});
    }
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    auto a = std::make_shared<std::vector<float>>(static_cast<std::size_t>(M) * K);
    auto b = std::make_shared<std::vector<float>>(static_cast<std::size_t>(K) * N);
    auto c = std::make_shared<std::vector<float>>(static_cast<std::size_t>(M) * N);
    for (auto* v : {a.get(), b.get()}) std::generate(v->begin(), v->end(), [&] { return normal(rng); });
    row.c.push_back({"OpenBLAS sgemm", true, [=] {
                       cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a->data(), K,
                                   b->data(), N, 0.0f, c->data(), N);
                     }, {}});
    if (blis.sgemm && !openblas_only) {
      row.c.push_back({"BLIS bli_sgemm", true, [=, f = blis.sgemm] {
                         const float one = 1.0f, zero = 0.0f;
                         f(0, 0, M, N, K, &one, a->data(), K, 1, b->data(), N, 1, &zero, c->data(), N, 1);
                       }, {}});
    }
#ifdef KFORGE_BENCH_WITH_DNNL
    if (!openblas_only) {
      auto dnnl = onednn_fp32(M, N, K);
      row.c.push_back({"oneDNN matmul (" + dnnl->impl + ")", true, [dnnl] { dnnl->run(); }, {}});
    }
#endif
    for (auto& x : row.c) x.call();  // warm: page faults, JIT, thread start
    for (int r = 0; r < rounds; ++r)
      for (auto& x : row.c) x.seconds.push_back(round_median(x.call, min_calls));
    rows.push_back(std::move(row));
  }

  fmt::print("{:<14} {:<36} {:>9} {:>8} {:>16} {:>13}\n", "M x N x K", "contestant", "GFLOP/s", "of peak",
             "this / kforge", "min..max");
  for (const auto& row : rows) {
    auto ratio_line = [&](const std::string& name, const std::vector<double>& num, const std::vector<double>& den,
                          double gflops) {
      std::vector<double> ratios;
      for (int r = 0; r < rounds; ++r) ratios.push_back(num[r] / den[r]);
      const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
      fmt::print("{:<14} {:<36} {:>9.1f} {:>8.2f} {:>15.2f}x {:>6.2f}..{:<6.2f}\n", "", name, gflops,
                 gflops / (peak * 1e-9), median_of(ratios), *lo, *hi);
    };
    std::vector<double> best_peer(rounds, std::numeric_limits<double>::infinity());
    for (const auto& x : row.c)
      if (x.peer)
        for (int r = 0; r < rounds; ++r) best_peer[r] = std::min(best_peer[r], x.seconds[r]);
    const double g0 = row.flops / median_of(row.c[0].seconds) * 1e-9;
    fmt::print("{:<14} {:<36} {:>9.1f} {:>8.2f}\n", row.shape, row.c[0].name, g0, g0 / (peak * 1e-9));
    for (std::size_t j = 1; j < row.c.size(); ++j)
      ratio_line(row.c[j].name, row.c[j].seconds, row.c[0].seconds, row.flops / median_of(row.c[j].seconds) * 1e-9);
    ratio_line("best peer / kforge default", best_peer, row.c[0].seconds, row.flops / median_of(best_peer) * 1e-9);
    if (!row.tuned.empty()) {
      ratio_line("best peer / kforge tuned", best_peer, row.c[1].seconds, row.flops / median_of(best_peer) * 1e-9);
      fmt::print("{:<14} tuned: {}\n", "", row.tuned);
    }
  }
  fmt::print("({} rounds; a round's figure is a contestant's median call; this / kforge = the contestant's time over "
             "kforge default's, per round (above 1: kforge is faster); best peer = the fastest peer of each round; of "
             "peak = over the measured fp32 peak, {:.0f} GFLOP/s; load average {}; threads {})\n",
             rounds, peak * 1e-9, bench::load_average(), nthreads);
  return 0;
}
