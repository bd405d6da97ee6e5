#pragma once
// A KernelBench problem file (a Python module with class Model, get_inputs(), get_init_inputs()
// and module-level size constants) as a kforge Problem (docs/kernelbench.md). Its reference is
// the module's own forward, run in float64 by torch in a Python process kforge keeps for the
// file (python/kforge_kernelbench.py); shapes, conditions and counts come from the same process.
//
// The ABI: get_inputs()'s tensors in order, then the Model's parameters and floating buffers
// (state_dict order), then forward's outputs, then the size constants as int.
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "kforge/kernelbench.hpp"
#include "kforge/problem.hpp"

namespace kforge {

class PythonServer;

// One tensor of the ABI at some sizes.
struct KbTensor {
  std::string name;
  Role role = Role::in;
  std::vector<std::int64_t> shape;
  std::string dtype;         // torch's name: float32, int64, bool
  std::string condition;     // "" (plain data), "index", "flag" or "positive"
  double low = 0, high = 0;  // index: [low, high); flag: probability of a one in `low`
  [[nodiscard]] std::int64_t elements() const;
};

// What the bridge says about the problem at one binding of its sizes.
struct KbShape {
  std::vector<KbTensor> tensors;
  std::map<std::string, std::string> fixed;  // non-tensor forward arguments, as Python writes them
  double flops = 0, length = 1;
  bool counted = false;      // FLOPs were counted (false: unknown, reported as 0)
  bool observed = false;     // conditions, FLOPs and length filled (a real draw of get_inputs)
};

class KernelBenchProblem final : public Problem {
 public:
  explicit KernelBenchProblem(const std::string& path);
  ~KernelBenchProblem() override;

  std::string name() const override { return name_; }
  std::string description() const override;
  std::vector<std::string> size_names() const override { return size_names_; }
  Sizes default_sizes() const override { return defaults_; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override;
  std::vector<std::string> scalar_names() const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override;
  Scalars scalars_for_trial(int) const override { return {}; }
  void check_sizes(const Sizes& s) const override;
  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override;
  void perturb(Instance& inst, std::size_t t, std::size_t i) const override;
  void reference(const Instance& inst, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& magnitude) const override;
  double reduction_length(const Sizes& s) const override;
  double flops(const Sizes& s) const override;
  double bytes(const Sizes& s, DType t) const override;
  std::function<void()> baseline(const Instance& inst, int threads) const override;
  std::string baseline_name() const override { return "torch eager (fp32, CPU)"; }
  // Kernel specs beside the problem file whose "problem" names this problem (kb.<stem>): its
  // kernels for verify, bench, tune and suite.
  std::vector<std::string> kernel_specs() const override;
  std::string source_file() const override { return path_; }

  // The tensors, shapes and counts at `s` (sizes refused by the module throw UsageError);
  // `observe` also draws get_inputs() to learn index ranges and counts the FLOPs.
  [[nodiscard]] KbShape shape(const Sizes& s, bool observe = false) const;
  // The bytes kforge and the reference need at `s`, and the budget they must fit
  // ($KFORGE_KB_MEMORY_GIB, default a quarter of physical memory).
  [[nodiscard]] double memory_needed(const Sizes& s) const;
  [[nodiscard]] static double memory_budget();
  // Sizes near `s` that fit the budget (the largest constants halved), or nothing.
  [[nodiscard]] std::optional<Sizes> fitting_sizes(const Sizes& s) const;
  [[nodiscard]] std::string torch_version() const { return torch_version_; }

  // KernelBench's own check: its trial seeds, get_inputs() and weights, in float32. Each trial
  // is an instance (inputs and state filled, outputs empty) and the outputs torch computed.
  [[nodiscard]] std::vector<KbTrial> kernelbench_trials(const Sizes& s, int trials, int seed) const;
  // torch eager's seconds per forward on KernelBench's inputs: {median, mean}.
  [[nodiscard]] std::pair<double, double> eager_time(const Sizes& s, int runs, int threads) const;

 private:
  nlohmann::json call(nlohmann::json req, const std::vector<const std::vector<double>*>& tensors = {},
                      std::vector<std::vector<double>>* reply = nullptr) const;

  std::string path_, name_, torch_version_;
  std::vector<std::string> size_names_;
  Sizes defaults_;
  std::vector<TensorSpec> specs_;  // at the default sizes; the same at every size
  std::unique_ptr<PythonServer> server_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<Sizes, bool>, std::shared_ptr<const KbShape>> shapes_;
  mutable std::map<Sizes, std::string> refused_;
};

// Whether `path` looks like a KernelBench problem file (a .py defining get_inputs).
[[nodiscard]] bool is_kernelbench_file(const std::string& path);

}  // namespace kforge
