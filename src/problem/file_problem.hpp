#pragma once
// A problem loaded from a problem file (src/problem/problem_file.hpp): the same interface as the
// library's compiled-in problems, so every command, the verifier and the tuner use it unchanged.
#include <memory>

#include "kforge/problem.hpp"
#include "problem/native_host.hpp"
#include "problem/problem_file.hpp"

namespace kforge {

class NativeCode;

class FileProblem final : public Problem {
 public:
  explicit FileProblem(ProblemFile f);
  ~FileProblem() override;

  std::string name() const override { return f_.name; }
  std::string description() const override { return f_.description; }
  std::vector<std::string> size_names() const override;
  Sizes default_sizes() const override;
  std::vector<DType> dtypes() const override { return f_.dtypes; }
  std::vector<TensorSpec> tensors() const override;
  std::vector<std::string> scalar_names() const override;
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override;
  Scalars scalars_for_trial(int trial) const override;
  void check_scalars(const Scalars& s) const override;
  bool reads_inout(const Instance& inst) const override;
  std::vector<Scalars> special_scalars() const override { return f_.special_scalars; }
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override;
  void check_sizes(const Sizes& s) const override;
  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override;
  void perturb(Instance& inst, std::size_t t, std::size_t i) const override;
  void reference(const Instance& inst, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& magnitude) const override;
  double reduction_length(const Sizes& s) const override;
  double flops(const Sizes& s) const override;
  double bytes(const Sizes& s, DType t) const override;
  std::function<void()> baseline(const Instance& inst, int threads) const override;
  std::string baseline_name() const override;
  std::vector<std::string> kernel_specs() const override;
  std::string source_file() const override { return f_.path; }
  // For the sandboxed worker, before its filter goes on (it can then run no compiler and start
  // no process): compiles the file's code, loads the baseline (timed beside the kernel) and
  // starts the native host that runs the reference and the conditioning hook from now on, so
  // that the kernel's process never holds them (native_host.hpp). Otherwise they are compiled
  // on first use and run in forked children of this process.
  void start_native_host() const;

 private:
  [[nodiscard]] std::vector<long long> size_values(const Sizes& s) const;
  void run_native(NativeEntry e, const std::string& what, std::vector<NativeBuffer>& buffers,
                  const NativeArgs& a) const;
  ProblemFile f_;
  std::unique_ptr<NativeCode> reference_, condition_, baseline_;
  mutable std::unique_ptr<NativeHost> host_;
};

}  // namespace kforge
