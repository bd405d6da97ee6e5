// Launch overhead at small sizes, on the cpu backend: what a call costs when the work is a few
// microseconds. Cases: GEMM 64^3 fp32 (kforge's gemm, OpenBLAS sgemm, a plain i-k-j loop), a
// 4 KiB ReLU (1024 floats: kforge's activation.relu and a plain loop), and an empty kernel of one
// block and of one block per thread (the pool's wake-up path, no work at all).
//
// Each round times every contestant in alternation, one call each, --samples times, so a noisy
// neighbour slows all of them alike; a round's figure per contestant is the median call, and
// the table shows the median over rounds of each ratio with its spread (min..max). kforge's
// time is the wall time around Backend::run (arguments packed once, as a timing loop does), the
// others' the wall time around their call. CPU timings are CPU timings.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kernel_launcher.hpp"
#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/measure.hpp"
#include "bench_host.hpp"

namespace {

using namespace kforge;
using Clock = std::chrono::steady_clock;

// The plain loops a user writes: i-k-j GEMM (C = alpha*A*B, beta = 0) and ReLU of X + bias,
// compiled -O3 -march=native with this program.
void loop_gemm(int M, int N, int K, float alpha, const float* A, const float* B, float* C) {
  for (int i = 0; i < M; ++i) {
    float* c = C + static_cast<std::ptrdiff_t>(i) * N;
    for (int j = 0; j < N; ++j) c[j] = 0;
    for (int k = 0; k < K; ++k) {
      const float a = alpha * A[i * K + k];
      const float* b = B + static_cast<std::ptrdiff_t>(k) * N;
      for (int j = 0; j < N; ++j) c[j] += a * b[j];
    }
  }
}
void loop_relu(int n, const float* x, const float* bias, float* y) {
  for (int i = 0; i < n; ++i) y[i] = std::max(x[i] + bias[i], 0.0f);
}

struct Contestant {
  std::string name;
  std::function<void()> call;
  std::vector<double> round_medians;
};

struct Case {
  std::string name;
  std::vector<Contestant> c;  // c[0] is kforge's
};

void run_rounds(Case& k, int rounds, int samples) {
  for (auto& x : k.c)
    for (int w = 0; w < 20; ++w) x.call();  // warm: caches, the pool's threads, lazy binding
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::vector<double>> s(k.c.size());
    for (int i = 0; i < samples; ++i)
      for (std::size_t j = 0; j < k.c.size(); ++j) {
        const auto t0 = Clock::now();
        k.c[j].call();
        s[j].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    for (std::size_t j = 0; j < k.c.size(); ++j) k.c[j].round_medians.push_back(median_of(s[j]));
  }
}

constexpr const char* kEmpty = R"(
static void body(const kf_ctx&, float*) {}
KF_KERNEL(empty, body))";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge launch overhead at small sizes vs OpenBLAS and plain loops, CPU timings"};
  int rounds = 5, samples = 2000, threads = 0;
  app.add_option("--rounds", rounds, "interleaved rounds")->capture_default_str();
  app.add_option("--samples", samples, "calls of each contestant per round")->capture_default_str();
  app.add_option("--threads", threads, "threads for kforge and OpenBLAS (0: all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  openblas_set_num_threads(nthreads);
  fmt::print(stderr, "cpu: {}\n", backend->device());

  // Each kforge kernel is verified at the size first (quick), so a fast wrong one cannot win.
  auto verified = [&](const std::string& problem, const Sizes& sizes) {
    EvalRequest req;
    req.problem = problem;
    req.kernel = library_kernel(*find_problem(problem), Lang::cpp, sizes);
    req.sizes = sizes;
    req.backend = "cpu";
    req.backend_options.threads = threads;
    req.verify.thorough = false;
    const EvalResult e = evaluate(req, *backend);
    if (!e.passed()) throw std::runtime_error(problem + " failed verification: " + e.error);
  };

  std::vector<Case> cases;
  const int n = 64;
  const Sizes gemm_sizes{{"M", n}, {"N", n}, {"K", n}};
  verified("gemm", gemm_sizes);
  auto gemm = std::make_shared<bench::KernelLauncher>(*backend, "gemm", gemm_sizes, DType::fp32);
  auto a = std::make_shared<std::vector<float>>(n * n, 0.5f), b = std::make_shared<std::vector<float>>(n * n, 0.25f),
       c = std::make_shared<std::vector<float>>(n * n);
  cases.push_back({"gemm 64^3 fp32",
                   {{fmt::format("kforge {} ({} block{})", gemm->kernel(), gemm->blocks(), gemm->blocks() > 1 ? "s" : ""),
                     [gemm] { gemm->launch(); }, {}},
                    {"OpenBLAS sgemm", [=] {
                       cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.25f, a->data(), n,
                                   b->data(), n, 0.0f, c->data(), n);
                     }, {}},
                    {"plain i-k-j loop", [=] { loop_gemm(n, n, n, 1.25f, a->data(), b->data(), c->data()); }, {}}}});

  const Sizes relu_sizes{{"M", 1}, {"N", 1024}};
  verified("activation.relu", relu_sizes);
  auto relu = std::make_shared<bench::KernelLauncher>(*backend, "activation.relu", relu_sizes, DType::fp32,
                                                      ParamValues{}, std::map<std::string, double>{{"with_bias", 1}});
  auto x = std::make_shared<std::vector<float>>(1024, -0.5f), bias = std::make_shared<std::vector<float>>(1024, 1.0f),
       y = std::make_shared<std::vector<float>>(1024);
  cases.push_back({"relu 4 KiB fp32",
                   {{fmt::format("kforge {} ({} block{})", relu->kernel(), relu->blocks(), relu->blocks() > 1 ? "s" : ""),
                     [relu] { relu->launch(); }, {}},
                    {"plain loop", [=] { loop_relu(1024, x->data(), bias->data(), y->data()); }, {}}}});

  // The empty kernel: the launch path alone, on the calling thread (1 block) and woken workers.
  auto empty = backend->compile(kEmpty, "empty", {});
  auto scratch = std::shared_ptr<Buffer>(backend->alloc(64));
  for (const std::int64_t blocks : {std::int64_t{1}, static_cast<std::int64_t>(nthreads)}) {
    auto call = [&, blocks, empty, scratch] {
      LaunchGeometry g;
      g.grid.x = blocks;
      const Arg args[] = {Arg::buf(*scratch)};
      backend->run(*empty, g, args);
    };
    cases.push_back({fmt::format("empty kernel, {} block{}", blocks, blocks > 1 ? "s" : ""),
                     {{"kforge launch", call, {}}, {"(nothing: the clock)", [] {}, {}}}});
  }

  for (auto& k : cases) {
    fmt::print(stderr, "  {} ...\n", k.name);
    run_rounds(k, rounds, samples);
  }

  fmt::print("{:<26} {:<34} {:>10} {:>16} {:>14}\n", "case", "contestant", "median us", "kforge / this",
             "min..max");
  for (const auto& k : cases) {
    for (std::size_t j = 0; j < k.c.size(); ++j) {
      std::vector<double> ratios;
      for (int r = 0; r < rounds; ++r) ratios.push_back(k.c[0].round_medians[r] / k.c[j].round_medians[r]);
      const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
      if (j == 0)
        fmt::print("{:<26} {:<34} {:>10.2f}\n", k.name, k.c[j].name, median_of(k.c[j].round_medians) * 1e6);
      else
        fmt::print("{:<26} {:<34} {:>10.2f} {:>15.2f}x {:>6.2f}..{:<6.2f}\n", "", k.c[j].name,
                   median_of(k.c[j].round_medians) * 1e6, median_of(ratios), *lo, *hi);
    }
  }
  fmt::print("({} rounds of {} interleaved calls each; a round's figure is its median call; kforge / this = "
             "kforge's time over the contestant's, per round (below 1: kforge is faster); load average {}; "
             "threads {})\n",
             rounds, samples, bench::load_average(), nthreads);
  return 0;
}
