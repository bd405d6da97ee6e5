// activation.<f>: Y = f(X + bias), elementwise over X, Y (M,N) row-major, with an optional fused
// per-column bias of length N (added when the scalar with_bias is 1, ignored when it is 0).
// One problem per function, all sharing one kernel source per backend (one entry each):
//   activation.relu        max(z, 0)
//   activation.leaky_relu  z > 0 ? z : slope * z          (slope a scalar)
//   activation.gelu_erf    z * Phi(z) = z/2 * (1 + erf(z / sqrt 2))
//   activation.gelu_tanh   z/2 * (1 + tanh(sqrt(2/pi) * (z + 0.044715 z^3)))
//   activation.silu        z * sigmoid(z) = z / (1 + exp(-z))
// Any M, N >= 1. fp32, or fp16/bf16 storage with fp32 arithmetic. Every instance holds
// negatives, exact zeros and large magnitudes, so an identity kernel never passes ReLU.
#include <cmath>
#include <numbers>

#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

enum class Fn { relu, leaky_relu, gelu_erf, gelu_tanh, silu };

struct FnInfo {
  Fn fn;
  const char* name;
  const char* formula;
  double flops;  // per element, a transcendental counted as one, plus one for the bias
};
constexpr FnInfo kFns[] = {
    {Fn::relu, "relu", "max(z, 0)", 2},
    {Fn::leaky_relu, "leaky_relu", "z > 0 ? z : slope*z", 3},
    {Fn::gelu_erf, "gelu_erf", "z/2 * (1 + erf(z/sqrt(2)))", 6},
    {Fn::gelu_tanh, "gelu_tanh", "z/2 * (1 + tanh(sqrt(2/pi) * (z + 0.044715 z^3)))", 9},
    {Fn::silu, "silu", "z / (1 + exp(-z))", 5},
};

// Error allowance of a transcendental function's own evaluation, in units of u (fp32's
// roundoff): up to 4 ulp = 8u (OpenCL allows erf 16 ulp over its whole range, 4 where it
// matters here; tanh 5; exp 3).
constexpr double kFnRoundings = 8;
// GELU's 1 + erf (or 1 + tanh) cancels where z < 0: a few ulps of erf, times |z|/2, is an
// absolute error that any implementation of the textbook formula makes.
constexpr double kGeluAbsolute = 8;
constexpr double kU32 = 0x1p-24;  // fp32's unit roundoff

class Activation final : public Problem {
 public:
  explicit Activation(const FnInfo& f) : f_(f) {}
  std::string name() const override { return std::string("activation.") + f_.name; }
  std::string description() const override {
    return std::string("Y = ") + f_.formula + ", z = X + bias (bias per column, when with_bias = 1); X, Y (M,N)";
  }
  std::vector<std::string> size_names() const override { return {"M", "N"}; }
  Sizes default_sizes() const override { return {{"M", 2048}, {"N", 4096}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32, DType::fp16, DType::bf16}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"bias", Role::in}, {"Y", Role::out}};
  }
  std::vector<std::string> scalar_names() const override {
    if (f_.fn == Fn::leaky_relu) return {"with_bias", "slope"};
    return {"with_bias"};
  }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    return t == 1 ? s.at("N") : s.at("M") * s.at("N");
  }
  // Even trials fuse the bias, odd ones do not (timing uses trial 1: no bias).
  std::map<std::string, double> scalars_for_trial(int trial) const override {
    std::map<std::string, double> s{{"with_bias", trial % 2 == 0 ? 1.0 : 0.0}};
    if (f_.fn == Fn::leaky_relu) s["slope"] = trial % 2 == 0 ? 0.125 : -0.75;
    return s;
  }

  // Whatever the distribution: every 7th element an exact zero, every 11th shifted by +1000 and
  // -1000 in turn (large magnitudes, representable in fp16 too; from 6 elements on, a positive
  // one), every 1009th in [-116, -84] (where SiLU's result is tiny, subnormal or 0 and GELU's
  // underflows: rare, as in real data, so a kernel's slow path for them does not set its speed),
  // and the normal and uniform draws are symmetric, so negatives are always there.
  // leaky_relu at slope 0 (relu) and 1 (identity): a kernel with a shortcut for either fails.
  std::vector<Scalars> special_scalars() const override {
    if (f_.fn != Fn::leaky_relu) return {};
    return {{{"slope", 0.0}, {"with_bias", 1.0}}, {{"slope", 1.0}, {"with_bias", 1.0}}};
  }
  // X as rows of N, bias element-wise, Y an output.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {s.at("N"), 0, -1}; }
  // index_width: X and Y at M = 2^16 + 1 rows of N = 2^15 (2^31 + 2^15 elements each; row 2^16
  // starts at flat index 2^31, where a 32-bit i * N wraps), the last two rows live. A zero row
  // of X gives f(bias) (f(0) = 0 without it) in every
  // row of Y, so the rows before the live ones are known.
  WideIndexShape wide_index_shape(const Sizes&) const override {
    return {{{"M", (1 << 16) + 1}, {"N", 1 << 15}}, {{"M", 2}, {"N", 1 << 15}}};
  }

  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    auto& x = inst.tensors[0];
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (i % 7 == 3) x[i] = 0;
      else if (i % 11 == 5) x[i] += i % 22 == 5 ? 1000 : -1000;
      else if (i % 1009 == 8) x[i] = -116 + static_cast<double>(i / 1009 % 65) * 0.5;
    }
    round_to(inst.dtype, x);
  }

  // Per element: y = f(z). The kernel's z = x + b rounds by u|z|, which f turns into
  // u|z f'(z)|; f's own evaluation adds a few ulps of |f(z)|; silu's exp(-z) adds u|z| of
  // relative error (as in softmax); GELU's cancellation adds kGeluAbsolute*u*|z|. With a
  // reduction length of 1 the bound's gamma_1 is u, so the magnitude is the sum in units of u.
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const bool bias = in.scalars.at("with_bias") != 0;
    const double slope = f_.fn == Fn::leaky_relu ? in.scalars.at("slope") : 0;
    const auto &X = in.tensors[0], &B = in.tensors[1];
    std::vector<double> y(M * N), m(M * N);
    parallel_for(M, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t e = i0 * N; e < i1 * N; ++e) {
        const double z = X[e] + (bias ? B[e % N] : 0.0);
        double f = 0, zdf = 0, extra = 0;  // f(z), |z f'(z)|, further error terms
        switch (f_.fn) {
          case Fn::relu: f = z > 0 ? z : 0; zdf = std::fabs(z); break;
          case Fn::leaky_relu: f = z > 0 ? z : slope * z; zdf = std::fabs(f) + std::fabs(z); break;
          case Fn::gelu_erf:
          case Fn::gelu_tanh: {
            double cdf, pdf;  // the smooth step and its derivative
            if (f_.fn == Fn::gelu_erf) {
              cdf = 0.5 * std::erfc(-z / std::numbers::sqrt2);
              pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
            } else {
              const double c = std::sqrt(2 / std::numbers::pi), a = c * (z + 0.044715 * z * z * z);
              const double t = std::tanh(a);
              cdf = 0.5 * (1 + t);
              pdf = 0.5 * (1 - t * t) * c * (1 + 3 * 0.044715 * z * z);
            }
            f = z * cdf;
            zdf = std::fabs(z * (cdf + z * pdf));
            extra = kGeluAbsolute * std::fabs(z);
            break;
          }
          case Fn::silu: {
            const double s = 1 / (1 + std::exp(-z));
            f = z * s;
            zdf = std::fabs(z * (s + z * s * (1 - s)));
            // exp(-|z|) is subnormal below z = -87.3: an absolute error of half its spacing
            // 2^-149, times |z| (in units of u: the bound multiplies by u).
            extra = std::fabs(f * z) + std::fabs(z) * 0x1p-149 / kU32;
            break;
          }
        }
        y[e] = f;
        m[e] = zdf + kFnRoundings * std::fabs(f) + extra;
      }
    });
    out = tensor_list(std::move(y));
    mag = tensor_list(std::move(m));
  }

  double reduction_length(const Sizes&) const override { return 1; }
  double flops(const Sizes& s) const override { return f_.flops * s.at("M") * s.at("N"); }
  // X read and Y written once, the bias read once.
  double bytes(const Sizes& s, DType t) const override {
    return (2.0 * s.at("M") * s.at("N") + s.at("N")) * dtype_size(t);
  }

  std::vector<std::string> kernel_specs() const override {
    const std::string base = std::string("kernels/activation/") + f_.name;
    return {base + "_cpu.json", base + "_opencl.json", base + "_cuda.json"};
  }

 private:
  const FnInfo& f_;
};

}  // namespace

std::shared_ptr<Problem> make_activation_problem(const std::string& fn) {
  for (const FnInfo& f : kFns)
    if (fn == f.name) return std::make_shared<Activation>(f);
  return nullptr;
}

}  // namespace kforge
