#pragma once
// A problem loaded from a problem file (src/problem/problem_file.hpp): the same interface as the
// library's compiled-in problems, so every command, the verifier and the tuner use it unchanged.
#include <memory>

#include "kforge/problem.hpp"
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
  // Compiles and loads the reference, conditioning hook and baseline now (they are otherwise
  // compiled on first use): the sandboxed worker can run no compiler once the kernel runs.
  void load_native_code() const;

 private:
  ProblemFile f_;
  std::unique_ptr<NativeCode> reference_, condition_, baseline_;
};

}  // namespace kforge
