#pragma once
// A library kernel ready to launch again and again from a bench program, without the
// evaluation's verification and measurement around it: its default (or given) parameters
// compiled, buffers with random values in the dtype, the arguments in the ABI's order (tensors,
// sizes, scalars). The benches verify each kernel once with kforge's own verify first.
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/dtype.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"

namespace kforge::bench {

class KernelLauncher {
 public:
  KernelLauncher(Backend& backend, const std::string& problem_name, const Sizes& sizes, DType dtype,
                 const ParamValues& params = {}, const std::map<std::string, double>& scalars = {})
      : backend_(backend) {
    const auto problem = find_problem(problem_name);
    const KernelSpec k = library_kernel(*problem, backend.lang(), sizes);
    kernel_ = k.name;
    params_ = k.resolve(params);
    module_ = backend.compile(k.source, k.entry, defines_for(params_, dtype), k.source_path);
    geometry_ = k.geometry(params_, sizes);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    const auto tensors = problem->tensors();
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      const std::int64_t n = problem->tensor_elements(t, sizes);
      std::vector<double> v(static_cast<std::size_t>(n));
      for (auto& x : v) x = normal(rng);
      const DType stored = storage_dtype(tensors[t], dtype);
      std::vector<unsigned char> bytes(static_cast<std::size_t>(n) * dtype_size(stored));
      encode(stored, v, bytes.data());
      buffers_.push_back(backend.alloc(bytes.size()));
      backend.write(*buffers_.back(), bytes.data(), bytes.size());
      args_.push_back(Arg::buf(*buffers_.back()));
    }
    for (const auto& name : problem->size_names()) args_.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(name))));
    const auto trial = problem->scalars_for_trial(1);  // the timing trial's scalars
    for (const auto& name : problem->scalar_names()) {
      const auto given = scalars.find(name);
      args_.push_back(Arg::f(static_cast<float>(given != scalars.end() ? given->second : trial.at(name))));
    }
  }
  // One launch; returns the backend's own seconds (the pool's run, arguments already packed).
  double launch() { return backend_.run(*module_, geometry_, args_); }
  [[nodiscard]] const std::string& kernel() const { return kernel_; }
  [[nodiscard]] const ParamValues& params() const { return params_; }
  [[nodiscard]] std::int64_t blocks() const { return geometry_.grid.x * geometry_.grid.y * geometry_.grid.z; }

 private:
  Backend& backend_;
  std::string kernel_;
  ParamValues params_;
  std::shared_ptr<Module> module_;
  LaunchGeometry geometry_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<Arg> args_;
};

}  // namespace kforge::bench
