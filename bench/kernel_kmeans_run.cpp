// Kernel k-means to convergence with kforge's kernel_kmeans step (kernels/kernel_kmeans/): the
// library kernel, compiled once, launched once per Lloyd iteration; its new labels become the
// next iteration's labels until none changes (or --max-iters). Never an N x N buffer: the
// process's peak resident memory is printed (ru_maxrss).
//
// Data: --x FILE and --labels FILE (raw float32, N x D and N; bench/kernel_kmeans_vs_sklearn.py
// writes them), or K Gaussian blobs and random initial labels drawn from --seed.
// --check: the double reference (the problem's reference()) iterates beside the kernel from the
// same initial labels; each iteration the kernel's labels must equal the reference's, except
// where the problem accepts another label (a true near-tie, within both distances' error
// bounds): then both go on from the kernel's labels. Exit 1 on any other difference.
// Prints one JSON line; --out FILE writes the final labels (float32).
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/alternative_answers.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/problem.hpp"

using namespace kforge;

namespace {

std::vector<float> read_floats(const std::string& path, std::size_t count) {
  std::vector<float> v(count);
  std::ifstream f(path, std::ios::binary);
  if (!f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float))))
    throw std::runtime_error("cannot read " + std::to_string(count) + " float32 values from '" + path + "'");
  return v;
}

// K blobs: centres N(0, 3^2) per coordinate, points N(centre, 1); labels uniform, each cluster
// given a point.
void make_blobs(std::int64_t n, std::int64_t d, std::int64_t k, std::uint64_t seed, std::vector<float>& x,
                std::vector<float>& labels) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> centre(static_cast<std::size_t>(k * d));
  for (auto& c : centre) c = 3 * normal(rng);
  x.resize(static_cast<std::size_t>(n * d));
  labels.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto c = static_cast<std::int64_t>(rng() % k);
    for (std::int64_t e = 0; e < d; ++e) x[i * d + e] = centre[c * d + e] + normal(rng);
    labels[i] = static_cast<float>(rng() % k);
  }
  for (std::int64_t c = 0; c < k; ++c) labels[(c * n) / k] = static_cast<float>(c);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kernel k-means to convergence with kforge's kernel_kmeans step"};
  std::int64_t n = 10000, d = 3, k = 8;
  int max_iters = 100, threads = 0;
  double gamma = 0.1, kind = 0, degree = 3, coef0 = 1;
  std::uint64_t seed = 1;
  std::string backend_name = "cpu", x_path, labels_path, out_path, params_text;
  bool check = false;
  app.add_option("--n", n, "points");
  app.add_option("--d", d, "dimensions");
  app.add_option("--k", k, "clusters");
  app.add_option("--gamma", gamma, "the kernel's gamma: RBF exp(-gamma |x-y|^2), poly (gamma <x,y> + coef0)^degree");
  app.add_option("--kind", kind, "0: RBF kernel, 1: polynomial kernel");
  app.add_option("--degree", degree, "the polynomial kernel's degree (integer 1..8)");
  app.add_option("--coef0", coef0, "the polynomial kernel's coef0");
  app.add_option("--seed", seed, "seed of the blobs and initial labels (without --x)");
  app.add_option("--x", x_path, "points, raw float32 N x D");
  app.add_option("--labels", labels_path, "initial labels, raw float32 N (integers in [0, K))");
  app.add_option("--out", out_path, "write the final labels here (raw float32)");
  app.add_option("--max-iters", max_iters, "stop after this many iterations");
  app.add_option("--backend", backend_name, "cpu or opencl");
  app.add_option("--threads", threads, "cpu threads (0: all cores)");
  app.add_option("--params", params_text, "kernel parameters, e.g. BI=16,TJ=512");
  app.add_flag("--check", check, "iterate the double reference beside the kernel and compare labels");
  CLI11_PARSE(app, argc, argv);

  try {
    const auto p = find_problem("kernel_kmeans");
    const Sizes sizes = p->resolve_sizes({{"N", n}, {"D", d}, {"K", k}});
    p->check_sizes(sizes);
    p->check_scalars({{"gamma", gamma}, {"kind", kind}, {"degree", degree}, {"coef0", coef0}});
    std::vector<float> x, labels;
    if (x_path.empty()) {
      make_blobs(n, d, k, seed, x, labels);
    } else {
      x = read_floats(x_path, static_cast<std::size_t>(n * d));
      labels = read_floats(labels_path, static_cast<std::size_t>(n));
    }
    for (float l : labels)
      if (!(l >= 0 && l < static_cast<float>(k) && l == static_cast<float>(static_cast<int>(l))))
        throw UsageError("initial label " + std::to_string(l) + " is not an integer in [0, K): fix --labels");

    const Lang lang = backend_name == "opencl" ? Lang::opencl : Lang::cpp;
    const KernelSpec spec = library_kernel(*p, lang, sizes);
    const ParamValues params = spec.resolve(params_text.empty() ? ParamValues{} : parse_assignments(params_text));
    if (auto bad = spec.check(params, sizes)) throw UsageError("parameters: " + *bad);
    auto backend = make_backend(backend_name, {.threads = threads});
    Defines defines;
    for (const auto& [name, v] : params) defines.emplace_back(name, std::to_string(v));
    defines.emplace_back("KF_DTYPE_FP32", "1");
    auto module = backend->compile(spec.source, spec.entry, defines, spec.source_path);

    // Buffers in the ABI's order: X, L, DIST, NEWL, SYNC (zero), then N, D, K, gamma, kind,
    // degree, coef0.
    const std::vector<float> zero(1, 0.0f);
    auto bx = backend->alloc(x.size() * 4), bl = backend->alloc(labels.size() * 4);
    auto bdist = backend->alloc(static_cast<std::size_t>(n * k) * 4), bnew = backend->alloc(labels.size() * 4);
    auto bsync = backend->alloc(4);
    backend->write(*bx, x.data(), x.size() * 4);
    backend->write(*bl, labels.data(), labels.size() * 4);
    backend->write(*bsync, zero.data(), 4);
    const std::vector<Arg> args{Arg::buf(*bx), Arg::buf(*bl), Arg::buf(*bdist), Arg::buf(*bnew), Arg::buf(*bsync),
                                Arg::i(static_cast<std::int32_t>(n)), Arg::i(static_cast<std::int32_t>(d)),
                                Arg::i(static_cast<std::int32_t>(k)), Arg::f(static_cast<float>(gamma)),
                                Arg::f(static_cast<float>(kind)), Arg::f(static_cast<float>(degree)),
                                Arg::f(static_cast<float>(coef0))};
    const LaunchGeometry g = spec.geometry(params, sizes);

    Instance ref_in;  // the reference's state: X in double, its own labels
    if (check) {
      ref_in.sizes = sizes;
      ref_in.scalars = {{"gamma", static_cast<float>(gamma)}, {"kind", kind}, {"degree", degree},
                        {"coef0", static_cast<float>(coef0)}};  // the values the kernel sees
      ref_in.tensors = {std::vector<double>(x.begin(), x.end()), std::vector<double>(labels.begin(), labels.end()),
                        {}, {}, {0.0}};
    }
    const auto* alt = dynamic_cast<const AlternativeAnswers*>(p.get());
    std::vector<double> seconds;
    std::vector<std::int64_t> changes;
    std::int64_t ties = 0, mismatches = 0;
    std::vector<float> next(labels.size());
    bool converged = false;
    for (int it = 0; it < max_iters && !converged; ++it) {
      seconds.push_back(backend->run(*module, g, args));
      backend->read(*bnew, next.data(), next.size() * 4);
      if (check) {
        std::vector<std::vector<double>> ref, mag;
        p->reference(ref_in, ref, mag);
        auto accepted = ref;
        alt->accept_alternatives(ref_in, {ref[0], std::vector<double>(next.begin(), next.end()), {0.0}}, accepted);
        for (std::int64_t i = 0; i < n; ++i) {
          if (next[i] == ref[1][i]) continue;
          if (accepted[1][i] == next[i]) ++ties;
          else ++mismatches;
        }
        ref_in.tensors[1].assign(next.begin(), next.end());  // both go on from the kernel's labels
      }
      std::int64_t changed = 0;
      for (std::size_t i = 0; i < next.size(); ++i) changed += next[i] != labels[i];
      changes.push_back(changed);
      converged = changed == 0;
      labels = next;
      backend->write(*bl, labels.data(), labels.size() * 4);
    }
    if (!out_path.empty()) {
      std::ofstream f(out_path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(labels.data()), static_cast<std::streamsize>(labels.size() * 4));
    }
    std::vector<double> sorted = seconds;
    std::sort(sorted.begin(), sorted.end());
    double total = 0;
    for (double s : seconds) total += s;
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const nlohmann::json out{{"n", n}, {"d", d}, {"k", k}, {"gamma", gamma}, {"kind", kind}, {"degree", degree},
                             {"coef0", coef0}, {"backend", backend->device()},
                             {"params", params}, {"iterations", seconds.size()}, {"converged", converged},
                             {"changes", changes}, {"kernel_s_total", total},
                             {"kernel_s_per_iter_median", sorted[sorted.size() / 2]},
                             {"kernel_s_per_iter_min", sorted.front()}, {"kernel_s_per_iter_max", sorted.back()},
                             {"peak_rss_mib", static_cast<double>(ru.ru_maxrss) / 1024.0},
                             {"checked", check}, {"tie_labels", ties}, {"mismatched_labels", mismatches}};
    fmt::print("{}\n", out.dump());
    return mismatches == 0 ? 0 : 1;
  } catch (const UsageError& e) {
    fmt::print(stderr, "kernel_kmeans_run: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // a file that cannot be read, a kernel that fails
    fmt::print(stderr, "kernel_kmeans_run: {}\n", e.what());
    return 2;
  }
}
