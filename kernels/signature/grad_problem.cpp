// signature_grad: the gradient of L = <GS, signature(X)> in the path X (B,L,D), for an upstream
// gradient GS (B, siglen) on every level 1..LEVEL (the layout of `signature`'s SIG), so
// GX (B,L,D) = dL/dX. The backward pass does not store the L prefix signatures: it runs the
// forward pass to the whole path's signature S, then walks the segments backwards, recovering
// each prefix from the next by S_(t-1) = S_t ⊗ exp(-Δ_t) (exp(Δ) ⊗ exp(-Δ) = 1 in the truncated
// tensor algebra), and propagates the adjoint through S_t = S_(t-1) ⊗ exp(Δ_t):
//   adj S_(t-1)[u] = sum_v adj S_t[uv] exp(Δ)[v]      adj exp(Δ)[v] = sum_u adj S_t[uv] S_(t-1)[u]
// then through exp(Δ)[i1..im] = exp(Δ)[i1..i(m-1)] Δ_im / m (level by level, top down) into Δ,
// and Δ_t = x_t - x_(t-1) into the two points. Memory: a few signatures per path, never L.
//
// Error bound: the same pass run on absolute values (|Δ| for both exp(Δ) and exp(-Δ), |GS|, the
// forward on |Δ|) sums every term's absolute value, so |fp32 - exact| <= γ_n times it, with n the
// longest chain of roundings: forward, recomputation and adjoint each (L-1) segments of about
// LEVEL+1 products and sums, the exponentials 2 LEVEL more: n = (L-1)(5 LEVEL + 5) + 8 LEVEL + 4.
// The recomputation's error is in it: exp(|Δ|) where the pass multiplies by exp(-Δ) makes the
// bound grow as the recomputed prefixes' errors do.
//
// Workspace: W (B, 5 (siglen + 1)), a scratch tensor (Role::scratch: poisoned before every run,
// never compared, not in the fewest bytes): five truncated tensors with their level 0 per path
// (the prefix S, exp(Δ), the adjoint of S before and after the segment, the adjoint of exp(Δ)),
// where the GPU kernels keep the backward pass's levels: a work-group per path has no private
// room for them. The cpu kernel keeps its own per-thread buffer (cache-resident, reused across
// paths) and leaves W alone.
#include <algorithm>
#include <cmath>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/structured_reconditioning.hpp"
#include "kforge/util.hpp"
#include "paths.hpp"

namespace kforge {
namespace {

using namespace signature_paths;

constexpr std::int64_t kWorkspaceTensors = 5;  // W's truncated tensors per path (module comment)

// Truncated tensors with their level 0: level k at off[k], size[k] = D^k words, row-major.
struct Levels {
  Levels(std::int64_t d, std::int64_t n) : D(d), N(n) {
    size[0] = 1, off[0] = 0;
    for (std::int64_t k = 1; k <= N + 1; ++k) off[k] = off[k - 1] + size[k - 1], size[k] = size[k - 1] * D;
  }
  [[nodiscard]] std::int64_t total() const { return off[N + 1]; }
  std::int64_t D, N, off[kMaxLevel + 3], size[kMaxLevel + 3];
};

// C = A ⊗ E: C^k[uv] = sum_j A^j[u] E^(k-j)[v].
void tensor_mul(const Levels& lv, const double* A, const double* E, double* C) {
  std::fill(C, C + lv.total(), 0.0);
  for (std::int64_t k = 0; k <= lv.N; ++k)
    for (std::int64_t j = 0; j <= k; ++j) {
      const std::int64_t m = k - j, sm = lv.size[m];
      for (std::int64_t u = 0; u < lv.size[j]; ++u) {
        const double a = A[lv.off[j] + u];
        for (std::int64_t v = 0; v < sm; ++v) C[lv.off[k] + u * sm + v] += a * E[lv.off[m] + v];
      }
    }
}

// The adjoints of C = A ⊗ E given adj C: adj A (ga) and adj E (ge), both overwritten.
void tensor_mul_adjoint(const Levels& lv, const double* A, const double* E, const double* gc, double* ga, double* ge) {
  std::fill(ga, ga + lv.total(), 0.0);
  std::fill(ge, ge + lv.total(), 0.0);
  for (std::int64_t k = 0; k <= lv.N; ++k)
    for (std::int64_t j = 0; j <= k; ++j) {
      const std::int64_t m = k - j, sm = lv.size[m];
      for (std::int64_t u = 0; u < lv.size[j]; ++u)
        for (std::int64_t v = 0; v < sm; ++v) {
          const double g = gc[lv.off[k] + u * sm + v];
          ga[lv.off[j] + u] += g * E[lv.off[m] + v];
          ge[lv.off[m] + v] += g * A[lv.off[j] + u];
        }
    }
}

// E = exp(Δ): E^m[w] = E^(m-1)[w / D] Δ[w % D] / m.
void tensor_exp(const Levels& lv, const double* delta, double* E) {
  E[0] = 1;
  for (std::int64_t m = 1; m <= lv.N; ++m)
    for (std::int64_t w = 0; w < lv.size[m]; ++w)
      E[lv.off[m] + w] = E[lv.off[m - 1] + w / lv.D] * delta[w % lv.D] / static_cast<double>(m);
}

// adj Δ (gd, added to) from adj E (ge, consumed), levels top down.
void tensor_exp_adjoint(const Levels& lv, const double* delta, const double* E, double* ge, double* gd) {
  for (std::int64_t m = lv.N; m >= 1; --m)
    for (std::int64_t w = 0; w < lv.size[m]; ++w) {
      const double g = ge[lv.off[m] + w] / static_cast<double>(m);
      ge[lv.off[m - 1] + w / lv.D] += g * delta[w % lv.D];
      gd[w % lv.D] += g * E[lv.off[m - 1] + w / lv.D];
    }
}

// One path's gradient (module comment); on absolute values when `abs` (the error scale).
void path_gradient(const Levels& lv, const double* x, const double* gs, std::int64_t L, bool abs, double* gx) {
  const std::int64_t D = lv.D, n = lv.total();
  std::vector<double> S(n), A(n), E(n), Einv(n), gS(n), gA(n), gE(n), delta(D), neg(D), gd(D);
  auto increment = [&](std::int64_t t) {  // Δ_t = x_t - x_(t-1), and what exp(-Δ) takes
    for (std::int64_t i = 0; i < D; ++i) {
      const double d = x[t * D + i] - x[(t - 1) * D + i];
      delta[i] = abs ? std::fabs(d) : d;
      neg[i] = abs ? std::fabs(d) : -d;
    }
  };
  std::fill(S.begin(), S.end(), 0.0);
  S[0] = 1;
  for (std::int64_t t = 1; t < L; ++t) {
    increment(t);
    tensor_exp(lv, delta.data(), E.data());
    tensor_mul(lv, S.data(), E.data(), A.data());
    S.swap(A);
  }
  gS[0] = 0;
  for (std::int64_t e = 1; e < n; ++e) gS[e] = abs ? std::fabs(gs[e - 1]) : gs[e - 1];
  std::fill(gx, gx + L * D, 0.0);
  for (std::int64_t t = L - 1; t >= 1; --t) {
    increment(t);
    tensor_exp(lv, delta.data(), E.data());
    tensor_exp(lv, neg.data(), Einv.data());
    tensor_mul(lv, S.data(), Einv.data(), A.data());  // the prefix before segment t
    tensor_mul_adjoint(lv, A.data(), E.data(), gS.data(), gA.data(), gE.data());
    std::fill(gd.begin(), gd.end(), 0.0);
    tensor_exp_adjoint(lv, delta.data(), E.data(), gE.data(), gd.data());
    for (std::int64_t i = 0; i < D; ++i) {
      gx[t * D + i] += gd[i];
      gx[(t - 1) * D + i] += abs ? gd[i] : -gd[i];
    }
    S.swap(A);
    gS.swap(gA);
  }
}

class SignatureGrad final : public Problem, public StructuredReconditioning {
 public:
  std::string name() const override { return "signature_grad"; }
  std::string description() const override {
    return "gradient of <GS, signature(X)> in X, by a backward pass that recomputes the prefixes with "
           "exp(-Δ): X (B,L,D), GS (B, D+...+D^LEVEL) -> GX (B,L,D)";
  }
  std::vector<std::string> size_names() const override { return {"B", "L", "D", "LEVEL"}; }
  Sizes default_sizes() const override { return {{"B", 128}, {"L", 256}, {"D", 6}, {"LEVEL", 4}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"GS", Role::in}, {"GX", Role::out}, {"W", Role::scratch}};
  }
  std::vector<std::string> scalar_names() const override { return {}; }
  Scalars scalars_for_trial(int) const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    if (t == 3) return s.at("B") * kWorkspaceTensors * (signature_length(s.at("D"), s.at("LEVEL")) + 1);
    return t == 1 ? s.at("B") * signature_length(s.at("D"), s.at("LEVEL")) : s.at("B") * s.at("L") * s.at("D");
  }
  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    if (s.at("L") < 2) throw UsageError("size L=" + std::to_string(s.at("L")) + " must be at least 2 (a path of one point has no increment)");
    if (s.at("LEVEL") > kMaxLevel) throw UsageError("size LEVEL=" + std::to_string(s.at("LEVEL")) + " must be in [1, 6]");
    if (signature_length(s.at("D"), s.at("LEVEL")) == 0)
      throw UsageError("sizes D=" + std::to_string(s.at("D")) + ", LEVEL=" + std::to_string(s.at("LEVEL")) +
                       " give more than 2^24 signature terms per path: lower D or LEVEL");
    check_int_abi("B*L*D", static_cast<double>(s.at("B")) * s.at("L") * s.at("D"));
    check_int_abi("B*siglen", static_cast<double>(s.at("B")) * signature_length(s.at("D"), s.at("LEVEL")));
    check_int_abi("B*5*(siglen+1)",
                  static_cast<double>(s.at("B")) * kWorkspaceTensors * (signature_length(s.at("D"), s.at("LEVEL")) + 1));
  }
  // Per segment the reference does about 4 tensor products of (LEVEL+1) siglen terms each.
  double fuzz_work(const Sizes& s) const override {
    const std::int64_t len = signature_length(s.at("D"), std::min<std::int64_t>(s.at("LEVEL"), kMaxLevel));
    return 4.0 * static_cast<double>(s.at("B")) * s.at("L") * (s.at("LEVEL") + 1) * (len > 0 ? len : 1e18);
  }
  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    scale_paths(inst.tensors[0], inst.sizes.at("B"), inst.sizes.at("L"), inst.sizes.at("D"), 4.0);
  }
  // Structured inputs on the paths X as sigkernel's (kernels/signature/problem.cpp, SigKernel), each
  // re-conditioned to TV <= 4 as drawn ones are (the level-LEVEL terms grow like TV^LEVEL / LEVEL!);
  // the cotangents GS stay as drawn.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {s.at("L") * s.at("D"), -1, -1, -1}; }
  void recondition_structured(Instance& inst) const override { condition_inputs(inst, 0, 0); }
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t B = in.sizes.at("B"), L = in.sizes.at("L"), D = in.sizes.at("D"), N = in.sizes.at("LEVEL");
    const std::int64_t len = signature_length(D, N);
    const Levels lv(D, N);
    std::vector<double> gx(static_cast<std::size_t>(B * L * D)), m(gx.size());
    parallel_for(B, [&](std::int64_t b0, std::int64_t b1) {
      for (std::int64_t b = b0; b < b1; ++b) {
        path_gradient(lv, &in.tensors[0][b * L * D], &in.tensors[1][b * len], L, false, &gx[b * L * D]);
        path_gradient(lv, &in.tensors[0][b * L * D], &in.tensors[1][b * len], L, true, &m[b * L * D]);
      }
    });
    out = tensor_list(std::move(gx));
    mag = tensor_list(std::move(m));
  }
  double reduction_length(const Sizes& s) const override {
    return static_cast<double>(s.at("L") - 1) * (5.0 * s.at("LEVEL") + 5) + 8.0 * s.at("LEVEL") + 4;
  }
  // Per segment: two exponentials (2 siglen), the recomputing product and the adjoint's two
  // (each sum_k (k+1) D^k multiply-adds, 2 flops), the exponential's adjoint (4 siglen); the
  // forward pass one exponential and one product.
  // The shared-prefix (Horner) count, the cheapest known, per segment: two products with
  // exp(±Δ) (the forward pass and the prefix's recovery: 2 P_k per level, P_k = D + ... + D^k,
  // as `signature`), and the adjoint's transposed Horner chain (4 P_k: a product and a
  // contraction per element of each level's chain; 3 P_(k-1): the T chain's recomputation and
  // adj A's additions), plus 3 D for Δ and the points.
  double flops(const Sizes& s) const override {
    const double D = static_cast<double>(s.at("D"));
    double per = 3 * D, partial = 0, p = 1;
    for (std::int64_t k = 1; k <= s.at("LEVEL"); ++k) {
      const double below = partial;
      p *= D, partial += p;
      per += 8 * partial + 3 * below;
    }
    return static_cast<double>(s.at("B")) * (s.at("L") - 1) * per;
  }
  double bytes(const Sizes& s, DType t) const override {
    return static_cast<double>(2 * tensor_elements(0, s) + tensor_elements(1, s)) * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override {
    // The large case first: its "applies" picks one path at a time where the batched buffers
    // (three siglen vectors) would pass a core's L2.
    return {"kernels/signature/signature_grad_large_cpu.json", "kernels/signature/signature_grad_cpu.json",
            "kernels/signature/signature_grad_opencl.json",
            "kernels/signature/signature_grad_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_signature_grad_problem() { return std::make_shared<SignatureGrad>(); }

}  // namespace kforge
