// rmsnorm and layernorm over the rows of X (M,N), row-major, with affine weights of length N:
//   rmsnorm:   Y = X / sqrt(mean(X^2) + eps) * gamma
//   layernorm: Y = (X - mean) / sqrt(var + eps) * gamma + beta     (var: the biased variance)
// Any M, N >= 1. fp32, or fp16/bf16 storage with fp32 arithmetic. Some rows are shifted by
// +1000 (mean 1000, spread 1), where var = E[x^2] - E[x]^2 in fp32 loses every digit: only a
// stable (two-pass or Welford) kernel passes layernorm.
#include <algorithm>
#include <cmath>

#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

// Roundings that reach one output beyond the reduction, in units of the accumulator's u:
// eps's addition, the division by N, sqrt and the reciprocal (up to 3 ulp each in OpenCL),
// the products by 1/sigma and gamma, the addition of beta.
constexpr double kExtraRoundings = 16;
constexpr double kU32 = 0x1p-24;  // fp32's unit roundoff: every kernel accumulates in fp32

class RowNorm : public Problem {
 public:
  explicit RowNorm(bool centered) : centered_(centered) {}
  std::string name() const override { return centered_ ? "layernorm" : "rmsnorm"; }
  std::string description() const override {
    return centered_ ? "row layernorm: Y = (X - mean) / sqrt(var + eps) * gamma + beta, X, Y (M,N)"
                     : "row rmsnorm: Y = X / sqrt(mean(X^2) + eps) * gamma, X, Y (M,N)";
  }
  std::vector<std::string> size_names() const override { return {"M", "N"}; }
  Sizes default_sizes() const override { return {{"M", 2048}, {"N", 4096}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32, DType::fp16, DType::bf16}; }
  std::vector<TensorSpec> tensors() const override {
    if (centered_) return {{"X", Role::in}, {"gamma", Role::in}, {"beta", Role::in}, {"Y", Role::out}};
    return {{"X", Role::in}, {"gamma", Role::in}, {"Y", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {"eps"}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const bool weights = t == 1 || (centered_ && t == 2);
    return weights ? s.at("N") : s.at("M") * s.at("N");
  }
  // eps exact in fp32 (2^-17 ~ 7.6e-6, 2^-10 ~ 1e-3), so the kernel sees the reference's value.
  std::map<std::string, double> scalars_for_trial(int trial) const override {
    return {{"eps", trial % 2 == 0 ? 0x1p-17 : 0x1p-10}};
  }
  // eps = 0 (allowed: a kernel must not divide by it or skip it) and eps = 1 (large enough that
  // a kernel which ignores eps fails; the trials' small values barely move the result).
  std::vector<Scalars> special_scalars() const override { return {{{"eps", 0.0}}, {{"eps", 1.0}}}; }
  // X as rows of N (a zero row gives 0 through eps; an all-equal row has no variance);
  // gamma and beta element-wise; Y an output.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    if (centered_) return {s.at("N"), 0, 0, -1};
    return {s.at("N"), 0, -1};
  }
  // index_width: X and Y at M = 2^16 + 1 rows of N = 2^15 (2^31 + 2^15 elements each; row 2^16
  // starts at flat index 2^31, where a 32-bit i * N wraps), the last two rows live. A zero row
  // of X gives 0 (rmsnorm) or beta (layernorm) in every
  // row of Y, so the rows before the live ones are known.
  WideIndexShape wide_index_shape(const Sizes&) const override {
    return {{{"M", (1 << 16) + 1}, {"N", 1 << 15}}, {{"M", 2}, {"N", 1 << 15}}};
  }

  // Every third row is shifted by +1000: mean 1000, spread that of the distribution.
  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    const std::int64_t M = inst.sizes.at("M"), N = inst.sizes.at("N");
    auto& x = inst.tensors[0];
    for (std::int64_t i = 1; i < M; i += 3)
      for (std::int64_t j = 0; j < N; ++j) x[i * N + j] += 1000;
    round_to(inst.dtype, x);
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const double eps = in.scalars.at("eps"), n = reduction_length(in.sizes);
    const double gamma_n = n * kU32 / (1 - n * kU32);
    const auto &X = in.tensors[0], &g = in.tensors[1];
    const std::vector<double>* beta = centered_ ? &in.tensors[2] : nullptr;
    std::vector<double> y(M * N), m(M * N);
    parallel_for(M, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) {
        const double* x = &X[i * N];
        double mean = 0, abs_mean = 0, amax = 0, ss = 0;
        if (centered_) {
          for (std::int64_t j = 0; j < N; ++j) mean += x[j];
          mean /= static_cast<double>(N);
        }
        for (std::int64_t j = 0; j < N; ++j) {
          ss += (x[j] - mean) * (x[j] - mean);
          abs_mean += std::fabs(x[j]);
          amax = std::max(amax, std::fabs(x[j]));
        }
        abs_mean /= static_cast<double>(N);
        const double var = ss / static_cast<double>(N), sigma = std::sqrt(var + eps);
        for (std::int64_t j = 0; j < N; ++j) {
          const double d = x[j] - mean, yhat = d / sigma, gy = g[j] * yhat;
          const double b = beta ? (*beta)[j] : 0.0;
          y[i * N + j] = gy + b;
          if (!centered_) {
            // sum of squares of n terms (relative gamma_n, halved by the sqrt) and a few roundings.
            m[i * N + j] = std::fabs(gy) * (1 + kExtraRoundings / n);
            continue;
          }
          // The mean is off by dmu <= gamma_n * mean|x|; x - mean then by u(|x| + |d|) + dmu,
          // which 1/sigma scales. sigma's relative error: (gamma_n + dmu^2/var)/2 plus a few
          // roundings; dmu^2/sigma^2 = gamma_n * (gamma_n * abs_mean^2 / sigma^2).
          m[i * N + j] = std::fabs(g[j]) / sigma * ((std::fabs(x[j]) + std::fabs(d)) / n + abs_mean) +
                         std::fabs(gy) * (1 + kExtraRoundings / n + gamma_n * abs_mean * abs_mean /
                                                                        (sigma * sigma)) +
                         std::fabs(b) * kExtraRoundings / n;
        }
      }
    });
    out = tensor_list(std::move(y));
    mag = tensor_list(std::move(m));
  }

  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("N")); }
  // Per element: rmsnorm square-add, scale, gamma (4); layernorm the mean's add, subtract,
  // square-add, scale, gamma, beta (7).
  double flops(const Sizes& s) const override {
    return (centered_ ? 7.0 : 4.0) * s.at("M") * s.at("N");
  }
  // X read and Y written once, the weights read once.
  double bytes(const Sizes& s, DType t) const override {
    const double M = s.at("M"), N = s.at("N");
    return (2 * M * N + (centered_ ? 2 : 1) * N) * dtype_size(t);
  }

  std::vector<std::string> kernel_specs() const override {
    const std::string base = "kernels/norm/" + name();
    return {base + "_cpu.json", base + "_opencl.json", base + "_cuda.json"};
  }

 private:
  bool centered_;
};

}  // namespace

std::shared_ptr<Problem> make_rmsnorm_problem() { return std::make_shared<RowNorm>(false); }
std::shared_ptr<Problem> make_layernorm_problem() { return std::make_shared<RowNorm>(true); }

}  // namespace kforge
