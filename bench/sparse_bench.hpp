#pragma once
// What the sparse family's bench programs share (fusedmm_vs_unfused, spmspv_vs_graphblas, the two
// *_adaptive_vs_fixed programs,
// sparse_run): a library kernel compiled once on a backend with its default parameters (and
// overrides), fp32 buffers made from an instance's tensors, the 1-minute load average, a ratio's
// cell in the tables, and the
// quick verification each program runs at a shape before timing it.
#include <algorithm>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/measure.hpp"
#include "kforge/problem.hpp"
#include "bench_host.hpp"
#include "tensor_upload.hpp"

namespace kforge::bench {

// A ratio over rounds as "median x (min..max)".
inline std::string ratio_cell(const std::vector<double>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format("{:.2f}x ({:.2f}..{:.2f})", median_of(v), *lo, *hi);
}

// "NAME=VALUE" texts to parameter values.
inline ParamValues parse_params(const std::vector<std::string>& texts) {
  ParamValues p;
  for (const auto& s : texts) p[s.substr(0, s.find('='))] = std::stoll(s.substr(s.find('=') + 1));
  return p;
}

// A library kernel of `problem` for the cpu backend at `sizes`, compiled; call it with the
// arguments in the ABI's order (tensors, sizes, scalars) and it returns the backend's seconds.
struct Launch {
  std::shared_ptr<Module> module;
  LaunchGeometry geometry;
  ParamValues params;
  Backend* backend = nullptr;
  double operator()(const std::vector<Arg>& args) const { return backend->run(*module, geometry, args); }
  [[nodiscard]] std::string params_text() const {
    std::string t;
    for (const auto& [k, v] : params) t += fmt::format("{}{}={}", t.empty() ? "" : ",", k, v);
    return t;
  }
};

// `spec` compiled for fp32 with its default parameters and `overrides`.
inline Launch compile(Backend& backend, const KernelSpec& spec, const Sizes& sizes, const ParamValues& overrides = {}) {
  Launch l;
  l.params = spec.resolve(overrides);
  Defines defines;
  for (const auto& [k, v] : l.params) defines.emplace_back(k, std::to_string(v));
  defines.emplace_back("KF_DTYPE_FP32", "1");
  l.module = backend.compile(spec.source, spec.entry, defines);
  l.geometry = spec.geometry(l.params, sizes);
  l.backend = &backend;
  return l;
}

// The problem's default kernel for the backend's language at `sizes`, compiled.
inline Launch prepare(Backend& backend, const Problem& p, const Sizes& sizes, const ParamValues& overrides = {}) {
  return compile(backend, library_kernel(p, backend.lang(), sizes), sizes, overrides);
}

// One of the problem's library kernels by name (a kernel that is not the default: the adaptive ones).
inline KernelSpec kernel_named(const Problem& p, const std::string& name) {
  for (const auto& k : library_kernels(p))
    if (k.name == name) return k;
  throw std::runtime_error("no kernel " + name + " for problem " + p.name());
}

inline std::vector<float> download(Backend& backend, Buffer& b, std::size_t n) {
  std::vector<float> f(n);
  backend.read(b, f.data(), n * sizeof(float));
  return f;
}

// The quick protocol on the library kernel at `sizes` with `scalars` fixed; throws on a failure
// (no figure is taken of a kernel that is wrong at that shape).
inline void verify_quick(Backend& backend, const std::string& problem, const Sizes& sizes, const Scalars& scalars,
                         const ParamValues& overrides, int threads) {
  const auto p = find_problem(problem);
  EvalRequest req;
  req.problem = problem;
  req.kernel = library_kernel(*p, Lang::cpp, sizes);
  req.sizes = sizes;
  req.scalars = req.verify.scalars = scalars;
  req.params = overrides;
  req.backend_options.threads = threads;
  req.verify.thorough = false;
  req.verify.trials = 1;
  const EvalResult e = evaluate(req, backend);
  if (!e.passed()) throw std::runtime_error(problem + " failed verification: " + e.error);
}

}  // namespace kforge::bench
