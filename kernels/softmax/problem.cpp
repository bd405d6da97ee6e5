// softmax: Y[i,j] = exp(X[i,j] - max_j X[i,:]) / sum_j exp(X[i,j] - max_j X[i,:]), row-major
// X, Y (M,N). Any M, N >= 1 (rows from 1 element to millions). fp32, or fp16/bf16 storage with
// fp32 arithmetic. The inputs include rows shifted by +-1000, where exp without the max
// subtraction overflows (or underflows to 0/0), so only a numerically safe kernel passes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

// Rounding errors that reach one output beyond the sum and the subtraction, in units of the
// accumulator's roundoff u: exp's own error, up to 3 ulp = 6u (OpenCL's bound; CUDA's expf
// and the cpu kernel's are 2) in the numerator and again in the terms of the sum, 1/sum, the
// final product and the rescaling of partial sums when a row is split.
constexpr double kExtraRoundings = 16;

class Softmax final : public Problem {
 public:
  std::string name() const override { return "softmax"; }
  std::string description() const override {
    return "row softmax, numerically safe: Y = exp(X - rowmax) / rowsum, X, Y (M,N)";
  }
  std::vector<std::string> size_names() const override { return {"M", "N"}; }
  Sizes default_sizes() const override { return {{"M", 2048}, {"N", 4096}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32, DType::fp16, DType::bf16}; }
  std::vector<TensorSpec> tensors() const override { return {{"X", Role::in}, {"Y", Role::out}}; }
  std::vector<std::string> scalar_names() const override { return {}; }
  std::int64_t tensor_elements(std::size_t, const Sizes& s) const override {
    return s.at("M") * s.at("N");
  }
  std::map<std::string, double> scalars_for_trial(int) const override { return {}; }
  // X as rows of N (a zero or constant row is uniform, a one-hot row peaks once; near overflow
  // exp overflows without the max subtraction). No scalars.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {s.at("N"), -1}; }
  // index_width: X and Y at M = 2^16 + 1 rows of N = 2^15 (2^31 + 2^15 elements each; row 2^16
  // starts at flat index 2^31, where a 32-bit i * N wraps), the last two rows live. A zero row
  // of X gives 1/N in every
  // row of Y, so the rows before the live ones are known.
  WideIndexShape wide_index_shape(const Sizes&) const override {
    return {{{"M", (1 << 16) + 1}, {"N", 1 << 15}}, {{"M", 2}, {"N", 1 << 15}}};
  }

  // Every fourth row is shifted by +1000 and the one two further by -1000: exp(1000)
  // overflows fp32, exp(-1000) underflows, so a kernel that skips the max subtraction fails.
  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    const std::int64_t M = inst.sizes.at("M"), N = inst.sizes.at("N");
    auto& x = inst.tensors[0];
    for (std::int64_t i = 0; i < M; ++i) {
      const double shift = i % 4 == 1 ? 1000 : i % 4 == 3 ? -1000 : 0;
      if (shift == 0) continue;
      for (std::int64_t j = 0; j < N; ++j) x[i * N + j] += shift;
    }
    round_to(inst.dtype, x);
  }

  // Error of a correct fp32 kernel, per output y_i (Higham-style, first order): x_i - m rounds
  // with error u|x_i - m|, which exp turns into a relative error of the same size; the sum of
  // n terms adds gamma_n plus the weighted relative errors of its terms, sum_j y_j|x_j - m|.
  // So |err_i| <= y_i * (gamma_n + u*(|x_i - m| + sum_j y_j|x_j - m| + c)). With n = N the
  // magnitude below makes gamma_n * magnitude equal to that.
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const auto& X = in.tensors[0];
    std::vector<double> y(M * N), m(M * N);
    const double n = reduction_length(in.sizes);
    parallel_for(M, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) {
        const double* x = &X[i * N];
        const double mx = *std::max_element(x, x + N);
        double* yi = &y[i * N];
        double sum = 0, spread = 0;
        for (std::int64_t j = 0; j < N; ++j) sum += yi[j] = std::exp(x[j] - mx);
        for (std::int64_t j = 0; j < N; ++j) {
          yi[j] /= sum;
          spread += yi[j] * (mx - x[j]);
        }
        for (std::int64_t j = 0; j < N; ++j)
          m[i * N + j] = y[i * N + j] * (1 + ((mx - x[j]) + spread + kExtraRoundings) / n);
      }
    });
    out = tensor_list(std::move(y));
    mag = tensor_list(std::move(m));
  }

  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("N")); }
  // Per element: the max compare, the subtraction, exp (counted as one), the sum, the scaling.
  double flops(const Sizes& s) const override { return 5.0 * s.at("M") * s.at("N"); }
  // X read once, Y written once.
  double bytes(const Sizes& s, DType t) const override {
    return 2.0 * s.at("M") * s.at("N") * dtype_size(t);
  }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/softmax/softmax_cpu.json", "kernels/softmax/softmax_opencl.json",
            "kernels/softmax/softmax_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_softmax_problem() { return std::make_shared<Softmax>(); }

}  // namespace kforge
