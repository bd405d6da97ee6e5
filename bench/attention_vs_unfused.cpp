// kforge's fused attention (RoPE + online softmax, one kernel) against the unfused composition
// a user writes with a BLAS: a RoPE pass, OpenBLAS sgemm for Q·Kᵀ, a softmax pass (causal mask),
// OpenBLAS sgemm for P·V (kernels/attention/unfused.hpp, the problem's baseline). On the CPU
// backend, fp32, both on all cores.
//
// Per shape: a short tuning at a proxy sequence length (--tune-seq, where the double-precision
// reference is cheap), then one verified evaluation at the shape whose timed runs alternate
// kforge and the peer (measure_pair); the samples are cut into --rounds consecutive rounds, the
// ratio of each round is the peer's median over kforge's, and the table shows the median ratio
// and its spread (min..max). Peak extra memory (beyond inputs and output) is computed from the
// buffers each side allocates: fused O(S·D) (per-thread tiles and rotary table), unfused O(S²).
// CPU timings are CPU timings: the figures describe this machine, not a GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/tune.hpp"
#include "kforge/util.hpp"
#include "kforge/measure.hpp"

namespace {

using namespace kforge;

struct Row {
  std::string shape, params;
  double kforge_s = 0, peer_s = 0, sol = 0, fused_mib = 0, unfused_mib = 0;
  std::vector<double> ratios;
};

// "2048:64:c" -> S=2048, D=64, causal.
struct Shape {
  std::int64_t S, D;
  bool causal;
};
Shape parse_shape(const std::string& s) {
  const auto parts = split(s, ':');
  if (parts.size() < 2 || parts.size() > 3 || (parts.size() == 3 && parts[2] != "c"))
    throw UsageError("shape '" + s + "': use S:D or S:D:c (causal)");
  return {std::stoll(parts[0]), std::stoll(parts[1]), parts.size() == 3};
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

Row run_shape(Backend& backend, const std::string& text, std::int64_t B, std::int64_t H,
              std::int64_t HKV, std::int64_t tune_seq, int budget, int rounds, int threads) {
  const Shape sh = parse_shape(text);
  const std::string problem_name = sh.causal ? "attention.causal" : "attention";
  const auto problem = find_problem(problem_name);
  EvalRequest base;
  base.problem = problem_name;
  base.kernel = library_kernel(*problem, backend.lang());
  base.sizes = problem->resolve_sizes({{"B", B}, {"H", H}, {"HKV", HKV}, {"S", std::min(sh.S, tune_seq)}, {"D", sh.D}});
  base.backend = backend.name();
  base.backend_options.threads = threads;
  base.verify.trials = 1;
  base.measure.max_time_s = 1.0;
  const TuneResult t = tune(base, backend, {"random", budget, 1});
  if (t.best < 0) throw std::runtime_error("no configuration passed at " + text);

  Row row;
  row.shape = fmt::format("{}x{}x{}x{}{}", H, HKV, sh.S, sh.D, sh.causal ? " causal" : "");
  EvalRequest req = base;
  req.sizes["S"] = sh.S;
  req.params = t.evaluations[t.best].params;
  for (const auto& [k, v] : req.params) row.params += fmt::format("{}{}={}", row.params.empty() ? "" : ",", k, v);
  req.verify.thorough = false;  // one trial at the full shape: the double reference is O(S²·D)
  req.bench = req.baseline = true;
  req.measure.repetitions = 3 * rounds;
  const EvalResult e = evaluate(req, backend);
  if (!e.passed() || !e.timing || !e.baseline) throw std::runtime_error(text + " failed: " + e.error);
  row.kforge_s = e.timing->median_s;
  row.peer_s = e.baseline->median_s;
  row.sol = e.roofline ? e.roofline->sol_fraction : 0;
  const std::size_t n = std::min(e.timing->samples.size(), e.baseline->samples.size());
  const std::size_t per = std::max<std::size_t>(1, n / rounds);
  for (std::size_t r0 = 0; r0 + per <= n; r0 += per) {
    const std::vector<double> a(e.timing->samples.begin() + r0, e.timing->samples.begin() + r0 + per);
    const std::vector<double> b(e.baseline->samples.begin() + r0, e.baseline->samples.begin() + r0 + per);
    row.ratios.push_back(median_of(b) / median_of(a));
  }

  // Extra memory. Fused: per worker thread the kernel's tiles (query stripes, K and V tiles, one
  // stripe's scores, accumulator, max, sum, rescale factor and position per row; rows padded to
  // whole stripes of NV·VW, head size to a multiple of MR) and its S x D/2 cos/sin table.
  // Unfused: the S x S scores (reused per head), rotated Q and K, its cos/sin table.
  const double S = sh.S, D = sh.D, BQ = req.params.at("BQ"), BKV = req.params.at("BKV"), MR = req.params.at("MR");
  const double vw = req.params.at("VW") > 0 ? req.params.at("VW") : __builtin_cpu_supports("avx512f") ? 16 : 8;
  const double nr = req.params.at("NV") * vw, DP = std::ceil(D / MR) * MR;
  const int workers = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  const double rows = std::ceil(static_cast<double>(H / HKV) * BQ / nr) * nr;  // BQ positions of H/HKV heads
  const double per_thread = rows * D + BKV * D + BKV * DP + BKV * nr + rows * DP + 4 * rows + S * D;
  row.fused_mib = workers * per_thread * 4 / (1 << 20);
  row.unfused_mib = (S * S + (B * H + B * HKV) * S * D + S * D) * 4 / (1 << 20);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge fused attention vs the unfused RoPE + sgemm + softmax + sgemm composition "
               "(fp32), CPU timings"};
  std::vector<std::string> shapes{"1024:64:c", "2048:64:c", "2048:128:c", "4096:64:c", "2048:64"};
  std::int64_t B = 1, H = 8, HKV = 2, tune_seq = 512;
  int budget = 8, rounds = 5, threads = 0;
  app.add_option("--shapes", shapes, "S:D (non-causal) or S:D:c (causal)")->capture_default_str();
  app.add_option("--batch", B, "batch")->capture_default_str();
  app.add_option("--heads", H, "query heads")->capture_default_str();
  app.add_option("--kv-heads", HKV, "key/value heads")->capture_default_str();
  app.add_option("--tune-seq", tune_seq, "sequence length the tuning runs at")->capture_default_str();
  app.add_option("--budget", budget, "tuning evaluations per shape")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds (3 samples each) per shape")->capture_default_str();
  app.add_option("--threads", threads, "threads for both (0: all cores)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  fmt::print(stderr, "cpu: {}\n", backend->device());
  const std::string load_before = load_average();
  std::vector<Row> rows;
  for (const auto& shape : shapes) {
    fmt::print(stderr, "  {} ...\n", shape);
    rows.push_back(run_shape(*backend, shape, B, H, HKV, tune_seq, budget, rounds, threads));
  }

  fmt::print("{:<22} {:>10} {:>11} {:>7} {:>12} {:>6} {:>10} {:>11}  {}\n", "HxHKVxSxD (B=" + std::to_string(B) + ")",
             "kforge ms", "unfused ms", "ratio", "min..max", "SOL", "fused MiB", "unfused MiB",
             "tuned parameters");
  for (const auto& r : rows) {
    const auto [lo, hi] = std::minmax_element(r.ratios.begin(), r.ratios.end());
    fmt::print("{:<22} {:>10.2f} {:>11.2f} {:>6.2f}x {:>5.2f}..{:<5.2f} {:>6.3f} {:>10.2f} {:>11.2f}  {}\n",
               r.shape, r.kforge_s * 1e3, r.peer_s * 1e3, median_of(r.ratios), *lo, *hi, r.sol,
               r.fused_mib, r.unfused_mib, r.params);
  }
  fmt::print("({} rounds of 3 interleaved samples each; ratio = unfused median / kforge median per round; "
             "load average before {}, after {})\n", rounds, load_before, load_average());
  return 0;
}
