// One fit of kforge's kernel_svm or kernel_logreg library kernel (kernels/kernel_model/) on given
// data, for bench/kernel_model_vs_sklearn.py: X (raw float32, N x D) and labels Y (raw float32,
// -1/+1) from files, lambda and gamma; the kernel compiled once, launched --repeats times (each a
// whole fit from scratch: Gram matrix and iterations); prints one JSON line with the backend's
// seconds per launch, writes A (N) and B (1) to --out (raw float32) for scoring. --check: the
// problem's optimality check (the verifier's, kernels/kernel_model/problem.cpp) on the answer.
#include <algorithm>
#include <fstream>

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
    throw UsageError("cannot read " + std::to_string(count) + " float32 values from '" + path + "'");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"one fit of kforge's kernel_svm / kernel_logreg kernel on given data"};
  std::string model = "svm", x_path, y_path, out_path, backend_name = "cpu", params_text;
  std::int64_t n = 0, d = 0;
  double lambda = 0.01, gamma = 1;
  int repeats = 1, threads = 0;
  bool check = false;
  app.add_option("--model", model, "svm or logreg");
  app.add_option("--n", n, "rows")->required();
  app.add_option("--d", d, "features")->required();
  app.add_option("--x", x_path, "rows, raw float32 N x D")->required();
  app.add_option("--y", y_path, "labels, raw float32 N (-1 or +1)")->required();
  app.add_option("--lambda", lambda, "regularization");
  app.add_option("--gamma", gamma, "RBF kernel exp(-gamma |x-z|^2)");
  app.add_option("--out", out_path, "write A (N) then B (1), raw float32");
  app.add_option("--backend", backend_name, "cpu or opencl");
  app.add_option("--threads", threads, "cpu threads (0: all cores)");
  app.add_option("--params", params_text, "kernel parameters, e.g. TJ=512,MAXIT=20000");
  app.add_option("--repeats", repeats, "launches (each a whole fit)");
  app.add_flag("--check", check, "run the verifier's optimality check on the answer (exit 1 if it fails)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (model != "svm" && model != "logreg") throw UsageError("--model " + model + ": use svm or logreg");
    const auto p = find_problem("kernel_" + model);
    const Sizes sizes = p->resolve_sizes({{"N", n}, {"D", d}});
    p->check_sizes(sizes);
    p->check_scalars({{"lambda", lambda}, {"gamma", gamma}});
    const std::vector<float> x = read_floats(x_path, static_cast<std::size_t>(n * d));
    const std::vector<float> y = read_floats(y_path, static_cast<std::size_t>(n));
    for (float v : y)
      if (v != 1.0f && v != -1.0f) throw UsageError("label " + std::to_string(v) + " is not -1 or +1: fix --y");

    const Lang lang = backend_name == "opencl" ? Lang::opencl : Lang::cpp;
    const KernelSpec spec = library_kernel(*p, lang, sizes);
    const ParamValues params = spec.resolve(params_text.empty() ? ParamValues{} : parse_assignments(params_text));
    if (auto bad = spec.check(params, sizes)) throw UsageError("parameters: " + *bad);
    auto backend = make_backend(backend_name, {.threads = threads});
    Defines defines;
    for (const auto& [name, v] : params) defines.emplace_back(name, std::to_string(v));
    defines.emplace_back("KF_DTYPE_FP32", "1");
    auto module = backend->compile(spec.source, spec.entry, defines, spec.source_path);

    // Buffers in the ABI's order: X, Y, F, A, B, W, then N, D, lambda, gamma.
    std::vector<std::unique_ptr<Buffer>> bufs;
    std::vector<Arg> args;
    for (std::size_t t = 0; t < p->tensors().size(); ++t) {
      bufs.push_back(backend->alloc(static_cast<std::size_t>(p->tensor_elements(t, sizes)) * 4));
      args.push_back(Arg::buf(*bufs.back()));
    }
    backend->write(*bufs[0], x.data(), x.size() * 4);
    backend->write(*bufs[1], y.data(), y.size() * 4);
    args.push_back(Arg::i(static_cast<std::int32_t>(n)));
    args.push_back(Arg::i(static_cast<std::int32_t>(d)));
    args.push_back(Arg::f(static_cast<float>(lambda)));
    args.push_back(Arg::f(static_cast<float>(gamma)));
    const LaunchGeometry g = spec.geometry(params, sizes);
    std::vector<double> seconds;
    for (int r = 0; r < std::max(1, repeats); ++r) seconds.push_back(backend->run(*module, g, args));
    std::vector<float> f(static_cast<std::size_t>(n)), a(static_cast<std::size_t>(n)), b(1);
    backend->read(*bufs[2], f.data(), f.size() * 4);
    backend->read(*bufs[3], a.data(), a.size() * 4);
    backend->read(*bufs[4], b.data(), 4);
    if (!out_path.empty()) {
      std::ofstream o(out_path, std::ios::binary);
      o.write(reinterpret_cast<const char*>(a.data()), static_cast<std::streamsize>(a.size() * 4));
      o.write(reinterpret_cast<const char*>(b.data()), 4);
    }
    bool accepted = true;
    if (check) {
      Instance in;
      in.sizes = sizes;
      in.scalars = {{"lambda", static_cast<float>(lambda)}, {"gamma", static_cast<float>(gamma)}};
      in.tensors = {std::vector<double>(x.begin(), x.end()), std::vector<double>(y.begin(), y.end()), {}, {}, {}, {}};
      const std::vector<std::vector<double>> got{std::vector<double>(f.begin(), f.end()),
                                                 std::vector<double>(a.begin(), a.end()), {b[0]}};
      std::vector<std::vector<double>> edited{std::vector<double>(f.size(), NAN), {}, {}};
      dynamic_cast<const AlternativeAnswers&>(*p).accept_alternatives(in, got, edited);
      accepted = edited == got;
    }
    std::sort(seconds.begin(), seconds.end());
    const nlohmann::json out{{"model", model}, {"n", n}, {"d", d}, {"lambda", lambda}, {"gamma", gamma},
                             {"backend", backend->device()}, {"params", params},
                             {"kernel_s_median", seconds[seconds.size() / 2]}, {"kernel_s_min", seconds.front()},
                             {"kernel_s_max", seconds.back()}, {"b", b[0]}, {"checked", check},
                             {"optimal", accepted}};
    fmt::print("{}\n", out.dump());
    return accepted ? 0 : 1;
  } catch (const UsageError& e) {
    fmt::print(stderr, "kernel_model_run: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kernel_model_run: {}\n", e.what());
    return 2;
  }
}
