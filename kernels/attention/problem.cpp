// attention and attention.causal: scaled dot-product attention with rotary position embedding
// (RoPE) and grouped-query attention, per batch b and query head h:
//
//   O[b,h] = softmax(scale · RoPE(Q[b,h]) · RoPE(K[b,g])ᵀ  [+ causal mask]) · V[b,g],
//   g = h / (H / HKV)  (each K/V head serves H/HKV consecutive query heads)
//
// Layouts (row-major): Q, O (B, H, S, D); K, V (B, HKV, S, D). Query i and key j both sit at
// position i (resp. j) in 0..S-1. The causal problem lets query i see keys j <= i only.
// RoPE is rotate-half (GPT-NeoX / LLaMA): for d < D/2, with θ_d = rope_base^(-2d/D),
//   x'[d]       = x[d]·cos(pos·θ_d) − x[d + D/2]·sin(pos·θ_d)
//   x'[d + D/2] = x[d + D/2]·cos(pos·θ_d) + x[d]·sin(pos·θ_d)
// so D must be even. One kernel serves both problems: the scalar `causal` (0 or 1) is fixed by
// the problem, and `scale` changes between trials so that a kernel hard-coding 1/sqrt(D) fails.
// fp32, or fp16/bf16 storage with fp32 arithmetic (the error model below is fp32's; the verifier
// adds the rounding of O to the storage type).
#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "unfused.hpp"
#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/softmax_bound.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

// The error model: what a correct fp32 kernel may get wrong, in units of fp32's roundoff u.
// The reference turns it into a first-order bound per output element (see reference()).
constexpr double kTrigUlps = 4;   // sin/cos of an fp32 angle (OpenCL's limit; CUDA 2, glibc 1)
constexpr double kThetaUlps = 4;  // θ_d = pow(base, -2d/D) in fp32 (3 ulp), then pos·θ_d rounded
constexpr double kExtraScoreUlps = 4;  // scale (and log2 e) folded into q, then s - max

class Attention final : public Problem {
 public:
  explicit Attention(bool causal) : causal_(causal) {}

  std::string name() const override { return causal_ ? "attention.causal" : "attention"; }
  std::string description() const override {
    return std::string(causal_ ? "causal " : "") +
           "attention O = softmax(scale*RoPE(Q)*RoPE(K)^T)*V, rotate-half RoPE, grouped-query "
           "(HKV K/V heads); Q,O (B,H,S,D), K,V (B,HKV,S,D)";
  }
  std::vector<std::string> size_names() const override { return {"B", "H", "HKV", "S", "D"}; }
  Sizes default_sizes() const override {
    return {{"B", 1}, {"H", 8}, {"HKV", 2}, {"S", 512}, {"D", 64}};
  }
  std::vector<DType> dtypes() const override { return {DType::fp32, DType::fp16, DType::bf16}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"Q", Role::in}, {"K", Role::in}, {"V", Role::in}, {"O", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {"scale", "rope_base", "causal"}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t heads = t == 1 || t == 2 ? s.at("HKV") : s.at("H");
    return s.at("B") * heads * s.at("S") * s.at("D");
  }
  // 0.125 is 1/sqrt(64); 0.375 is not 1/sqrt of any head size a kernel might assume.
  std::map<std::string, double> scalars_for_trial(int trial) const override {
    return {{"scale", trial % 2 == 0 ? 0.125 : 0.375}, {"rope_base", 10000.0},
            {"causal", causal_ ? 1.0 : 0.0}};
  }

  // scale = 1 (no scaling) and 0 (uniform weights: the mean of the visible values), and
  // another RoPE base (Llama 3's 500000): a kernel that hard-codes 1/sqrt(D) or 10000 fails.
  std::vector<Scalars> special_scalars() const override {
    return {{{"scale", 1.0}}, {{"scale", 0.0}}, {{"rope_base", 500000.0}}};
  }
  // Structured inputs: rows of D in Q, K and V. A zero (or subnormal) row of Q gives a row of
  // equal scores, the uniform weights a shortcut may mishandle; zero rows of V, keys that add
  // nothing to the numerator but still to the softmax's denominator. Q and K stay conditioned
  // (every pattern but near_overflow keeps |q|, |k| <= 4, and near_overflow leaves them as
  // drawn). near_overflow scales V alone, to max / (4 S): an online-softmax kernel's
  // unnormalized sum over up to S keys (weights <= 1 after the running max) then stays below a
  // quarter of the largest value. Scaled by the bound's unit (reduction length 1) instead, V at
  // max/4 overflowed every flash kernel where the exact output is finite (issue 24's finding):
  // a range limit of the online softmax, which the pattern now respects, not a bug to catch.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {s.at("D"), s.at("D"), s.at("D"), -1};
  }
  double near_overflow_length(const Sizes& s) const override { return static_cast<double>(s.at("S")); }
  bool near_overflow_scales(std::size_t t) const override { return t == 2; }

  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    const auto D = s.at("D"), H = s.at("H"), HKV = s.at("HKV");
    if (D % 2 != 0)
      throw UsageError("size D=" + std::to_string(D) +
                       " must be even: rotate-half RoPE pairs dimension d with d + D/2");
    if (D > 256) throw UsageError("size D=" + std::to_string(D) + " is above the largest head size, 256");
    if (H % HKV != 0)
      throw UsageError("size H=" + std::to_string(H) + " must be a multiple of HKV=" +
                       std::to_string(HKV) + " (each K/V head serves H/HKV query heads)");
  }

  // The index_width check (docs/verification.md): Q, K, V and O past 2^31 elements, split along
  // B: B = 2^21 + 1 batches of one head (H = HKV = 1) of S = 16 positions of D = 64 (batch 2^21
  // starts at flat index 2^31, where b * S * D in int wraps), the last two live. Batches are
  // independent, and a zero batch gives O = 0 (equal scores, uniform weights, zero values), as
  // the check requires. O grows with Q: written whole (8 GiB in fp32, 4 GiB in fp16/bf16) where
  // memory allows, folded otherwise. The work is 4 S = 64 operations per element of Q at the
  // problem's own count, but a kernel computes whole query tiles (the library's cpu kernel
  // BQ = 64 rows, whatever S): about 2^31 x 4 x 64 = 550 GFLOP there (docs: its cost).
  WideIndexShape wide_index_shape(const Sizes& requested) const override {
    (void)requested;
    WideIndexShape w;
    w.sizes = {{"B", (1 << 21) + 1}, {"H", 1}, {"HKV", 1}, {"S", 16}, {"D", 64}};
    w.live = w.sizes;
    w.live["B"] = 2;
    return w;
  }

  // Scores must stay in a range where softmax is not a step function of rounding: Q and K are
  // scaled by a power of two (exact) so that |q|, |k| <= 4. V and the distributions' shapes
  // (wide, sparse, integers) are kept.
  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    for (std::size_t t : {0u, 1u}) {
      auto& x = inst.tensors[t];
      double mx = 0;
      for (double v : x) mx = std::max(mx, std::fabs(v));
      if (mx <= 4) continue;
      const double f = std::ldexp(1.0, -static_cast<int>(std::ceil(std::log2(mx / 4))));
      for (double& v : x) v *= f;
      round_to(inst.dtype, x);  // a 16-bit subnormal may lose its last bits
    }
  }

  // In double, materializing each row of scores. Beside each output, the first-order error
  // bound of a correct fp32 kernel, in units of u (so reduction_length is 1 and the verifier's
  // γ_1 ≈ u turns it into an absolute bound): include/kforge/softmax_bound.hpp's analysis, with
  // the error E_ij of score s_ij from RoPE's angle and sin/cos errors and the D-term dot product.
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t B = in.sizes.at("B"), H = in.sizes.at("H"), HKV = in.sizes.at("HKV"),
                       S = in.sizes.at("S"), D = in.sizes.at("D"), half = D / 2;
    const double scale = in.scalars.at("scale"), base = in.scalars.at("rope_base");
    const bool causal = in.scalars.at("causal") != 0;
    const auto &Q = in.tensors[0], &K = in.tensors[1], &V = in.tensors[2];

    // RoPE of every row, exact in double, and the error weight of each rotated element:
    // |x'_d - fl(x'_d)| <= u·w_d with w_d = (|x_d| + |x_pair|)·(trig ulps + 2 + angle error).
    std::vector<double> theta(half), theta_err(half);
    for (std::int64_t d = 0; d < half; ++d) {
      theta[d] = std::pow(base, -2.0 * d / D);
      theta_err[d] = theta[d] * (kThetaUlps + std::fabs(std::log(theta[d])));  // + exponent rounding
    }
    const auto rope = [&](const std::vector<double>& x, std::int64_t rows, std::vector<double>& r,
                          std::vector<double>& w) {
      r.assign(rows * S * D, 0.0);
      w.assign(rows * S * D, 0.0);
      for (std::int64_t row = 0; row < rows * S; ++row) {
        const double pos = static_cast<double>(row % S);
        const double* xr = &x[row * D];
        for (std::int64_t d = 0; d < half; ++d) {
          const double c = std::cos(pos * theta[d]), s = std::sin(pos * theta[d]);
          const double a = xr[d], b = xr[d + half];
          r[row * D + d] = a * c - b * s;
          r[row * D + d + half] = b * c + a * s;
          const double e = (std::fabs(a) + std::fabs(b)) * (kTrigUlps + 2 + pos * theta_err[d]);
          w[row * D + d] = w[row * D + d + half] = e;
        }
      }
    };
    std::vector<double> qr, qw, kr, kw;
    rope(Q, B * H, qr, qw);
    rope(K, B * HKV, kr, kw);
    // Per key, the weight its |k'| and error carry into E_ij: (D + extra)|k'_d| + w_d.
    std::vector<double> kc(kr.size());
    for (std::size_t e = 0; e < kr.size(); ++e)
      kc[e] = (static_cast<double>(D) + kExtraScoreUlps) * std::fabs(kr[e]) + kw[e];

    std::vector<double> o(B * H * S * D), m(B * H * S * D);
    parallel_for(B * H * S, [&](std::int64_t r0, std::int64_t r1) {
      std::vector<double> s(S), err(S);
      for (std::int64_t row = r0; row < r1; ++row) {
        const std::int64_t i = row % S, bh = row / S, b = bh / H, h = bh % H;
        const std::int64_t kv = (b * HKV + h / (H / HKV)) * S;  // first row of this K/V head
        const double* q = &qr[row * D];
        const double* qe = &qw[row * D];
        const std::int64_t n = causal ? i + 1 : S;  // keys this query sees
        for (std::int64_t j = 0; j < n; ++j) {
          const double* k = &kr[(kv + j) * D];
          const double* kcj = &kc[(kv + j) * D];
          double dot = 0, ej = 0;
          for (std::int64_t d = 0; d < D; ++d) {
            dot += q[d] * k[d];
            ej += std::fabs(q[d]) * kcj[d] + qe[d] * std::fabs(k[d]);
          }
          s[j] = scale * dot;
          err[j] = scale * ej;
        }
        softmax_weighted_sum(s, err, n, D, [&](std::int64_t j) { return &V[(kv + j) * D]; }, &o[row * D],
                             &m[row * D]);
      }
    });
    out = tensor_list(std::move(o));
    mag = tensor_list(std::move(m));
  }

  // The magnitude is already an error bound in units of u (see reference()).
  double reduction_length(const Sizes&) const override { return 1; }
  // Two matrix products per (b, h): S·S·D multiply-adds each, halved (plus the diagonal) when
  // causal. exp, RoPE and the softmax sums are not counted.
  double flops(const Sizes& s) const override {
    const double S = s.at("S"), pairs = causal_ ? S * (S + 1) / 2 : S * S;
    return 4.0 * s.at("B") * s.at("H") * pairs * s.at("D");
  }
  double bytes(const Sizes& s, DType t) const override {
    const double rows = static_cast<double>(s.at("B")) * s.at("S") * s.at("D");
    return (2 * s.at("H") + 2 * s.at("HKV")) * rows * dtype_size(t);
  }

  // The unfused composition a user writes: RoPE pass, sgemm Q·Kᵀ, softmax pass, sgemm P·V.
  std::function<void()> baseline(const Instance& in, int threads) const override {
    const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
    auto peer = std::make_shared<attention::Unfused>(in, nthreads);
    return [peer] { peer->run(); };
  }
  std::string baseline_name() const override { return "unfused_rope_sgemm_softmax_sgemm"; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/attention/attention_cpu.json", "kernels/attention/attention_opencl.json",
            "kernels/attention/attention_cuda.json"};
  }

 private:
  bool causal_;
};

}  // namespace

std::shared_ptr<Problem> make_attention_problem() { return std::make_shared<Attention>(false); }
std::shared_ptr<Problem> make_attention_causal_problem() { return std::make_shared<Attention>(true); }

}  // namespace kforge
