// kforge's bf16 GEMM (fp32 accumulation; AVX-512 BF16 dot products where the CPU has them) with
// its default parameters, against the peers a user could call instead: oneDNN's bf16 matmul
// (when built with Debian's libdnnl-dev), OpenBLAS's cblas_sbgemm when the installed OpenBLAS
// exports it (looked up at run time: Debian's 0.3.21 does not), OpenBLAS sgemm on fp32 copies,
// and kforge's own fp32 GEMM. C = A*B (alpha 1, beta 0), row-major, every contestant on the
// same threads.
//
// Every shape is verified first (`kforge verify` quick, bf16). Then `--rounds` rounds: in each,
// every contestant in turn runs at least `--min-calls` calls and 0.2 s; its round figure is the
// median call. Ratios are per round (peer's time over kforge bf16's: above 1, kforge is
// faster), shown as the median over rounds and min..max. "of peak" is GFLOP/s over the
// ceilings' peak for the dtype (`kforge ceilings`: bf16 dot products, fp32 FMAs).
// CPU timings are CPU timings.
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
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
  if (d.size() != 3) throw UsageError("shape '" + s + "': use N or MxNxK");
  return {{"M", d[0]}, {"N", d[1]}, {"K", d[2]}};
}

// OpenBLAS's bf16 GEMM, where the library was built with it (BUILD_BFLOAT16).
using Sbgemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                        const std::uint16_t*, blasint, const std::uint16_t*, blasint, float, float*, blasint);
Sbgemm find_sbgemm() { return reinterpret_cast<Sbgemm>(dlsym(RTLD_DEFAULT, "cblas_sbgemm")); }

struct Contestant {
  std::string name;
  DType dtype;  // for its fraction of the peak
  std::function<void()> call;
  std::vector<double> seconds;  // per round
};

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

#ifdef KFORGE_BENCH_WITH_DNNL
// oneDNN's matmul, bf16 in and out, every input 1.0.
std::shared_ptr<kforge::bench::DnnlMatmul> onednn_bf16(int M, int N, int K) {
  auto m = std::make_shared<kforge::bench::DnnlMatmul>(M, N, K, dnnl::memory::data_type::bf16);
  for (auto* t : {&m->A, &m->B}) {  // 1.0 in bf16
    auto* p = static_cast<std::uint16_t*>(t->get_data_handle());
    std::fill(p, p + t->get_desc().get_size() / 2, std::uint16_t{0x3f80});
  }
  return m;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge bf16 GEMM vs oneDNN bf16 matmul, OpenBLAS (sbgemm where it exists, sgemm), CPU timings"};
  std::vector<std::string> shapes{"512", "1024", "2048", "257x383x129", "1000x1000x999"};
  std::string params_text;
  int rounds = 3, min_calls = 3, threads = 0;
  app.add_option("--shapes", shapes, "N for N^3, or MxNxK")->capture_default_str();
  app.add_option("--params", params_text, "kforge bf16 parameters (default: the spec's defaults), e.g. MR=8,NV=3");
  app.add_option("--rounds", rounds, "interleaved rounds per shape")->capture_default_str();
  app.add_option("--min-calls", min_calls, "calls per contestant per round, at least (and 0.2 s)")->capture_default_str();
  app.add_option("--threads", threads, "threads for every contestant (0: all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  openblas_set_num_threads(nthreads);
  const Ceilings ceil = ceilings(*backend);
  const Sbgemm sbgemm = find_sbgemm();
  fmt::print(stderr, "cpu: {}\n  peaks: bf16 {:.0f} GFLOP/s, fp32 {:.0f} GFLOP/s (kforge ceilings)\n  cblas_sbgemm: {}\n",
             backend->device(), ceil.flops_for(DType::bf16) * 1e-9, ceil.flops_for(DType::fp32) * 1e-9,
             sbgemm ? "found" : "absent from the installed OpenBLAS");
  const ParamValues params = params_text.empty() ? ParamValues{} : parse_assignments(params_text);
  const std::map<std::string, double> plain{{"alpha", 1.0}, {"beta", 0.0}};

  struct Row {
    std::string shape;
    double flops;
    std::vector<Contestant> c;  // c[0]: kforge bf16
  };
  std::vector<Row> rows;
  bool dnnl_skip_said = false;  // the oneDNN bf16 column left out (said once, and under the table)
  for (const auto& shape : shapes) {
    const Sizes sizes = parse_shape(shape);
    const int M = static_cast<int>(sizes.at("M")), N = static_cast<int>(sizes.at("N")),
              K = static_cast<int>(sizes.at("K"));
    fmt::print(stderr, "  {} ...\n", shape);
    EvalRequest req;
    req.problem = "gemm";
    req.kernel = library_kernel(*find_problem("gemm"), Lang::cpp, sizes);
    req.sizes = sizes;
    req.dtype = DType::bf16;
    req.params = params;
    req.backend = "cpu";
    req.backend_options.threads = threads;
    req.verify.thorough = false;
    if (const EvalResult e = evaluate(req, *backend); !e.passed())
      throw std::runtime_error("kforge bf16 gemm failed verification at " + shape + ": " + e.error);

    Row row{shape, 2.0 * M * N * K, {}};
    auto k16 = std::make_shared<bench::KernelLauncher>(*backend, "gemm", sizes, DType::bf16, params, plain);
    auto k32 = std::make_shared<bench::KernelLauncher>(*backend, "gemm", sizes, DType::fp32, ParamValues{}, plain);
    row.c.push_back({"kforge bf16", DType::bf16, [k16] { k16->launch(); }, {}});
    row.c.push_back({"kforge fp32", DType::fp32, [k32] { k32->launch(); }, {}});
#ifdef KFORGE_BENCH_WITH_DNNL
    // oneDNN has no bf16 matmul on a CPU without AVX-512 (AVX2 only: "could not create a
    // primitive descriptor iterator"): that column is left out, said once, not an abort.
    try {
      auto dnnl = onednn_bf16(M, N, K);
      row.c.push_back({"oneDNN bf16 (" + dnnl->impl + ")", DType::bf16, [dnnl] { dnnl->run(); }, {}});
    } catch (const dnnl::error& e) {
      if (!dnnl_skip_said)
        fmt::print(stderr, "  oneDNN bf16 matmul: not available on this CPU ({}); its column is left out\n",
                   e.what());
      dnnl_skip_said = true;
    }
#endif
    auto a = std::make_shared<std::vector<float>>(static_cast<std::size_t>(M) * K, 1.0f);
    auto b = std::make_shared<std::vector<float>>(static_cast<std::size_t>(K) * N, 1.0f);
    auto c = std::make_shared<std::vector<float>>(static_cast<std::size_t>(M) * N);
    row.c.push_back({"OpenBLAS sgemm fp32", DType::fp32, [=] {
                       cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a->data(), K,
                                   b->data(), N, 0.0f, c->data(), N);
                     }, {}});
    if (sbgemm) {
      auto a16 = std::make_shared<std::vector<std::uint16_t>>(a->size(), 0x3f80);
      auto b16 = std::make_shared<std::vector<std::uint16_t>>(b->size(), 0x3f80);
      row.c.push_back({"OpenBLAS sbgemm bf16", DType::bf16, [=] {
                         sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a16->data(), K,
                                b16->data(), N, 0.0f, c->data(), N);
                       }, {}});
    }
    for (auto& x : row.c) x.call();  // warm
    for (int r = 0; r < rounds; ++r)
      for (auto& x : row.c) x.seconds.push_back(round_median(x.call, min_calls));
    rows.push_back(std::move(row));
  }

  fmt::print("{:<14} {:<44} {:>9} {:>8} {:>14} {:>13}\n", "M x N x K", "contestant", "GFLOP/s", "of peak",
             "this / kforge", "min..max");
  for (const auto& row : rows) {
    for (std::size_t j = 0; j < row.c.size(); ++j) {
      const auto& x = row.c[j];
      const double gflops = row.flops / median_of(x.seconds) * 1e-9;
      const double peak = ceil.flops_for(x.dtype) * 1e-9;
      std::vector<double> ratios;
      for (int r = 0; r < rounds; ++r) ratios.push_back(x.seconds[r] / row.c[0].seconds[r]);
      const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
      if (j == 0)
        fmt::print("{:<14} {:<44} {:>9.1f} {:>8.2f}\n", row.shape, x.name, gflops, gflops / peak);
      else
        fmt::print("{:<14} {:<44} {:>9.1f} {:>8.2f} {:>13.2f}x {:>6.2f}..{:<6.2f}\n", "", x.name, gflops,
                   gflops / peak, median_of(ratios), *lo, *hi);
    }
  }
  fmt::print("({} rounds; a round's figure is a contestant's median call; this / kforge = the contestant's time "
             "over kforge bf16's, per round (above 1: kforge bf16 is faster); of peak = over the ceilings' peak "
             "for the contestant's dtype; cblas_sbgemm {}{}; load average {}; threads {})\n",
             rounds, sbgemm ? "found" : "absent", dnnl_skip_said ? "; oneDNN bf16 matmul not available on this CPU" : "",
             bench::load_average(), nthreads);
  return 0;
}
