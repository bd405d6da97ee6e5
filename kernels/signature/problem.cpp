// The signature family (see README.md): path signatures and the signature kernel of
// piecewise-linear paths, fp32. A path is L points in D channels, row-major (L,D); a batch of
// them is (B,L,D).
//
//   signature  SIG (B, siglen) = the truncated signature, levels 1..LEVEL concatenated, level k
//              a row-major D^k block (word i1..ik at i1*D^(k-1) + ... + ik), siglen =
//              D + D^2 + ... + D^LEVEL (iisignature's `sig` layout: no leading 1 for level 0).
//              Built segment by segment by Chen's identity: S <- S ⊗ exp(Δ).
//   sigkernel  K (B1,B2) = the Gram matrix k(x_a, y_b) of the signature kernel, by the explicit
//              finite-difference scheme of its Goursat PDE on the grid of increments, each
//              increment split into 2^DYADIC pieces (DYADIC = 0: the plain grid).
//
// Both references run the very same discretization in double, so the check measures rounding
// only: the PDE scheme's own discretization error (which DYADIC reduces) is not part of it.
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

// ---- signature ---------------------------------------------------------------------------------

class Signature final : public Problem {
 public:
  std::string name() const override { return "signature"; }
  std::string description() const override {
    return "truncated path signature, levels 1..LEVEL concatenated: X (B,L,D) -> SIG (B, D+...+D^LEVEL)";
  }
  std::vector<std::string> size_names() const override { return {"B", "L", "D", "LEVEL"}; }
  Sizes default_sizes() const override { return {{"B", 128}, {"L", 256}, {"D", 6}, {"LEVEL", 4}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override { return {{"X", Role::in}, {"SIG", Role::out}}; }
  std::vector<std::string> scalar_names() const override { return {}; }
  Scalars scalars_for_trial(int) const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    return t == 0 ? s.at("B") * s.at("L") * s.at("D") : s.at("B") * signature_length(s.at("D"), s.at("LEVEL"));
  }
  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    if (s.at("L") < 2) throw UsageError("size L=" + std::to_string(s.at("L")) + " must be at least 2 (a path of one point has no increment)");
    if (s.at("LEVEL") > kMaxLevel)
      throw UsageError("size LEVEL=" + std::to_string(s.at("LEVEL")) + " must be in [1, 6]");
    if (signature_length(s.at("D"), s.at("LEVEL")) == 0)
      throw UsageError("sizes D=" + std::to_string(s.at("D")) + ", LEVEL=" + std::to_string(s.at("LEVEL")) +
                       " give more than 2^24 signature terms per path: lower D or LEVEL");
    check_int_abi("B*L*D", static_cast<double>(s.at("B")) * s.at("L") * s.at("D"));
    check_int_abi("B*siglen", static_cast<double>(s.at("B")) * signature_length(s.at("D"), s.at("LEVEL")));
  }
  // The reference walks every signature term of every segment: that, not the product of the
  // sizes, is what a fuzzed shape costs.
  double fuzz_work(const Sizes& s) const override {
    const std::int64_t len = signature_length(s.at("D"), std::min<std::int64_t>(s.at("LEVEL"), kMaxLevel));
    return static_cast<double>(s.at("B")) * s.at("L") * (len > 0 ? len : 1e18);
  }
  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    scale_paths(inst.tensors[0], inst.sizes.at("B"), inst.sizes.at("L"), inst.sizes.at("D"), 4.0);
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override;

  // Rounding errors on the longest path from an increment to a level-k term (README.md, "Error
  // bound"): at most k+1 additions per segment (Chen's sum of k+1 products) and 4 roundings per
  // increment factor (its subtraction, its 1/m! scaling, constant and product, its product into
  // the term), k factors: (L-1)(k+1) + 4k, plus 2 to spare.
  static double level_length(std::int64_t L, std::int64_t k) { return static_cast<double>(L - 1) * (k + 1) + 4.0 * k + 2; }
  double reduction_length(const Sizes& s) const override { return level_length(s.at("L"), s.at("LEVEL")); }
  // Structured inputs: X a matrix of points, rows of D. identical_rows and all_equal make every
  // path constant (every increment zero: the signature is 0), zero_columns fixes channels 0, 3,
  // ... at 0 (fewer moving coordinates), one_hot_rows makes each point a unit vector (each
  // increment moves two coordinates by 1), zero_rows sends every third point to the origin,
  // alternating_signs zig-zags (a large total variation), subnormal_inputs gives subnormal
  // increments whose products underflow, negative_zero -0.0 points.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {s.at("D"), -1}; }
  // near_overflow: the level-LEVEL terms (products of LEVEL increments, at most TV^LEVEL /
  // LEVEL! for a total variation TV <= 2 (L-1) D max|x|) overflow first, so max|x| is chosen
  // for TV^LEVEL / LEVEL! = a quarter of fp32's largest value, given as the length that the
  // pattern divides a quarter of it by (it scales X to max / (4 length)). Every level and every
  // partial sum of Chen's identity then stays finite; only a kernel that forms a larger
  // intermediate (a power of the path's scale, a product of unscaled terms) overflows.
  double near_overflow_length(const Sizes& s) const override {
    const double big = 3.4028234663852886e38, level = static_cast<double>(s.at("LEVEL"));
    const double tv = std::pow(big / 4 * std::tgamma(level + 1), 1 / level);
    const double top = tv / (2.0 * static_cast<double>(s.at("L") - 1) * static_cast<double>(s.at("D")));
    return big / (4 * top);
  }
  std::vector<std::vector<double>> reduction_lengths(const Instance& in) const override {
    const std::int64_t B = in.sizes.at("B"), L = in.sizes.at("L"), D = in.sizes.at("D"), N = in.sizes.at("LEVEL");
    std::vector<double> one;  // one path's lengths, level by level
    for (std::int64_t k = 1, p = D; k <= N; ++k, p *= D) one.insert(one.end(), static_cast<std::size_t>(p), level_length(L, k));
    std::vector<double> all;
    all.reserve(one.size() * B);
    for (std::int64_t b = 0; b < B; ++b) all.insert(all.end(), one.begin(), one.end());
    return {std::move(all)};
  }
  // Per segment, Horner's form of Chen's identity with shared prefixes (README.md): level k
  // costs 2 (D + D^2 + ... + D^k) operations (a multiply and an add per term of R_m, and the
  // increment's D subtractions).
  double flops(const Sizes& s) const override {
    const double D = static_cast<double>(s.at("D"));
    double per = 0, partial = 0, p = 1;
    for (std::int64_t k = 1; k <= s.at("LEVEL"); ++k) p *= D, partial += p, per += 2 * partial;
    return static_cast<double>(s.at("B")) * (s.at("L") - 1) * (per + D);
  }
  double bytes(const Sizes& s, DType t) const override {
    return static_cast<double>(tensor_elements(0, s) + tensor_elements(1, s)) * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override {
    // The large case first: its "applies" picks one path at a time where siglen vectors (the
    // batched buffer) would pass a core's L2 (siglen > 16384).
    return {"kernels/signature/signature_large_cpu.json", "kernels/signature/signature_cpu.json",
            "kernels/signature/signature_opencl.json", "kernels/signature/signature_cuda.json"};
  }
};

// S <- S ⊗ exp(Δ) for one path, in place, levels from the top down (level k reads only lower
// levels, still the old ones), each by Horner's rule over the word's prefix:
//   new S^k[i1..ik] = S^k + (((Δ_i1/k + S^1[i1]) Δ_i2/(k-1) + S^2[i1 i2]) Δ_i3/(k-2) + ...) Δ_ik/1
// Called with `delta` = |Δ| on the magnitudes it gives the same sum over absolute values.
void chen_step(double* S, const double* delta, std::int64_t D, std::int64_t N, const std::int64_t* off,
               std::vector<double>& r, std::vector<double>& next) {
  for (std::int64_t k = N; k >= 1; --k) {
    r.assign(delta, delta + D);
    for (double& v : r) v /= static_cast<double>(k);
    for (std::int64_t m = 1; m < k; ++m) {  // r: d^m prefixes of length m
      next.resize(r.size() * D);
      const double* Sm = S + off[m];
      const double scale = 1.0 / static_cast<double>(k - m);
      for (std::size_t p = 0; p < r.size(); ++p)
        for (std::int64_t i = 0; i < D; ++i) next[p * D + i] = (Sm[p] + r[p]) * delta[i] * scale;
      r.swap(next);
    }
    double* Sk = S + off[k];
    for (std::size_t e = 0; e < r.size(); ++e) Sk[e] += r[e];
  }
}

void Signature::reference(const Instance& in, std::vector<std::vector<double>>& out,
                          std::vector<std::vector<double>>& mag) const {
  const std::int64_t B = in.sizes.at("B"), L = in.sizes.at("L"), D = in.sizes.at("D"), N = in.sizes.at("LEVEL");
  const std::int64_t len = signature_length(D, N);
  std::int64_t off[kMaxLevel + 2] = {0, 0};
  for (std::int64_t k = 1, p = D; k <= N; ++k, p *= D) off[k + 1] = off[k] + p;
  const auto& X = in.tensors[0];
  std::vector<double> sig(static_cast<std::size_t>(B * len), 0.0), m(sig.size(), 0.0);
  parallel_for(B, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<double> delta(D), abs_delta(D), r, next;
    for (std::int64_t b = b0; b < b1; ++b) {
      for (std::int64_t t = 0; t + 1 < L; ++t) {
        for (std::int64_t i = 0; i < D; ++i) {
          delta[i] = X[(b * L + t + 1) * D + i] - X[(b * L + t) * D + i];
          abs_delta[i] = std::fabs(delta[i]);
        }
        chen_step(&sig[b * len], delta.data(), D, N, off, r, next);
        chen_step(&m[b * len], abs_delta.data(), D, N, off, r, next);
      }
    }
  });
  out = tensor_list(std::move(sig));
  mag = tensor_list(std::move(m));
}

// ---- sigkernel ---------------------------------------------------------------------------------

class SigKernel final : public Problem, public StructuredReconditioning {
 public:
  std::string name() const override { return "sigkernel"; }
  std::string description() const override {
    return "signature kernel Gram matrix by its Goursat PDE (explicit scheme, dyadic refinement DYADIC): "
           "X (B1,L1,D), Y (B2,L2,D) -> K (B1,B2)";
  }
  std::vector<std::string> size_names() const override { return {"B1", "B2", "L1", "L2", "D", "DYADIC"}; }
  Sizes default_sizes() const override {
    return {{"B1", 64}, {"B2", 64}, {"L1", 128}, {"L2", 128}, {"D", 8}, {"DYADIC", 0}};
  }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override { return {{"X", Role::in}, {"Y", Role::in}, {"K", Role::out}}; }
  std::vector<std::string> scalar_names() const override { return {}; }
  Scalars scalars_for_trial(int) const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    if (t == 0) return s.at("B1") * s.at("L1") * s.at("D");
    if (t == 1) return s.at("B2") * s.at("L2") * s.at("D");
    return s.at("B1") * s.at("B2");
  }
  void check_sizes(const Sizes& s) const override {
    check_pde_sizes(s);
    check_int_abi("B1*L1*D", static_cast<double>(s.at("B1")) * s.at("L1") * s.at("D"));
    check_int_abi("B2*L2*D", static_cast<double>(s.at("B2")) * s.at("L2") * s.at("D"));
    check_int_abi("B1*B2", static_cast<double>(s.at("B1")) * s.at("B2"));
    check_int_abi("(L2-1)*2^DYADIC", static_cast<double>(s.at("L2") - 1) * (1 << s.at("DYADIC")));
  }
  double fuzz_work(const Sizes& s) const override {
    const double r = std::ldexp(1.0, 2 * static_cast<int>(std::min<std::int64_t>(s.at("DYADIC"), 30)));
    return static_cast<double>(s.at("B1")) * s.at("B2") * s.at("L1") * s.at("L2") * (r + s.at("D"));
  }
  void condition_inputs(Instance& inst, std::uint64_t, int) const override {
    const std::int64_t D = inst.sizes.at("D");
    scale_paths(inst.tensors[0], inst.sizes.at("B1"), inst.sizes.at("L1"), D, 2.0);
    scale_paths(inst.tensors[1], inst.sizes.at("B2"), inst.sizes.at("L2"), D, 2.0);
  }
  // Structured inputs (struct8): each path of X and Y a row of L*D (a point's D channels in
  // turn), so zero_rows gives constant zero paths, identical_rows identical paths in a batch,
  // one_hot_rows a path with one coordinate moving at one point (up by 1, then down), all_equal
  // constant paths (every increment zero: K = 1), alternating_signs zig-zags, negative_zero
  // -0.0 entries, the subnormal patterns increments whose products underflow. Each pattern is
  // then re-conditioned (recondition_structured: the same power-of-two scaling to TV <= 2, which
  // keeps zeros, equalities and signs): the PDE grows like exp(TV_x TV_y), so a one-hot or
  // zig-zag path at full scale would overflow the exact kernel. near_overflow is therefore
  // scaled back to the conditioned range (no scale keeps the PDE finite and near fp32's top).
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {s.at("L1") * s.at("D"), s.at("L2") * s.at("D"), -1};
  }
  void recondition_structured(Instance& inst) const override { condition_inputs(inst, 0, 0); }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override;

  // Per node: the inner product (D + 2 roundings, twice in a²), a², /12 and two additions in
  // the coefficients (2D + 9), the step's multiply and add-or-subtract (+3); the magnitude
  // carries each node's local error to the output (sigkernel_pair).
  double reduction_length(const Sizes& s) const override { return 2.0 * s.at("D") + 12; }
  // Per coarse cell the inner product (2D) and the two coefficients (5: a², its /12, a/2 and
  // two additions); per fine cell one add, two multiplies and a subtraction (4).
  double flops(const Sizes& s) const override {
    const double pairs = static_cast<double>(s.at("B1")) * s.at("B2");
    const double cells = static_cast<double>(s.at("L1") - 1) * (s.at("L2") - 1);
    return pairs * cells * (2.0 * s.at("D") + 5 + 4.0 * std::ldexp(1.0, 2 * static_cast<int>(s.at("DYADIC"))));
  }
  double bytes(const Sizes& s, DType t) const override {
    return static_cast<double>(tensor_elements(0, s) + tensor_elements(1, s) + tensor_elements(2, s)) * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override {
    return {"kernels/signature/sigkernel_cpu.json", "kernels/signature/sigkernel_opencl.json",
            "kernels/signature/sigkernel_cuda.json"};
  }
};

// One pair: the scheme on the (n1+1) x (n2+1) grid of nodes, K = 1 on row 0 and column 0; node
// (p,q) comes from cell (p-1,q-1), with a = <Δx_((p-1)>>λ), Δy_((q-1)>>λ)> / 4^λ:
//   K[p][q] = (K[p][q-1] + K[p-1][q]) c1 - K[p-1][q-1] c2,  c1 = 1 + a/2 + a²/12, c2 = 1 - a²/12
// The error scale: a kernel's rounding at node (p,q) is a local error ε_pq, at most
// γ_(2D+12) ((|K[p][q-1]| + |K[p-1][q]|) c̄1 + |K[p-1][q-1]| c̄2) with c̄ the coefficients on
// ā = Σ_d |Δx_d Δy_d| / 4^λ (the coefficients' own errors included), and reaches the output
// through the linear scheme as Λ_pq ε_pq, Λ_pq = ∂K[n1][n2]/∂K[p][q] (the adjoint sweep below).
// So magnitude = 2 Σ |Λ_pq| (...) and reduction_length = 2D + 12 (first order; the 2 covers the
// second-order terms). Summing every term's absolute value instead (the Higham bound) would
// count lattice paths: Delannoy numbers, 10^5 at a 12 x 6 grid, where the scheme cancels them.
void sigkernel_pair(const double* x, const double* y, std::int64_t L1, std::int64_t L2, std::int64_t D, int lambda,
                    double& k_out, double& m_out, std::vector<double>& K) {
  const std::int64_t n1 = (L1 - 1) << lambda, n2 = (L2 - 1) << lambda, W = n2 + 1, C2 = L2 - 1;
  const double scale = std::ldexp(1.0, -2 * lambda);
  std::vector<double> a(static_cast<std::size_t>((L1 - 1) * C2)), abar(a.size());
  for (std::int64_t ci = 0; ci + 1 < L1; ++ci)
    for (std::int64_t cj = 0; cj < C2; ++cj) {
      double s = 0, sa = 0;
      for (std::int64_t d = 0; d < D; ++d) {
        const double p = (x[(ci + 1) * D + d] - x[ci * D + d]) * (y[(cj + 1) * D + d] - y[cj * D + d]);
        s += p, sa += std::fabs(p);
      }
      a[ci * C2 + cj] = s * scale, abar[ci * C2 + cj] = sa * scale;
    }
  const auto cell = [&](std::int64_t i, std::int64_t j) { return (i >> lambda) * C2 + (j >> lambda); };
  const auto c1 = [&](std::int64_t i, std::int64_t j) { const double c = a[cell(i, j)]; return 1 + c / 2 + c * c / 12; };
  const auto c2 = [&](std::int64_t i, std::int64_t j) { const double c = a[cell(i, j)]; return 1 - c * c / 12; };
  K.assign(static_cast<std::size_t>((n1 + 1) * W), 1.0);
  for (std::int64_t p = 1; p <= n1; ++p)
    for (std::int64_t q = 1; q <= n2; ++q)
      K[p * W + q] = (K[p * W + q - 1] + K[(p - 1) * W + q]) * c1(p - 1, q - 1) - K[(p - 1) * W + q - 1] * c2(p - 1, q - 1);
  // Λ row by row from the last: node (p,q) feeds (p,q+1) by c1 of cell (p-1,q), (p+1,q) by c1
  // of cell (p,q-1) and (p+1,q+1) by -c2 of cell (p,q).
  std::vector<double> cur(static_cast<std::size_t>(W + 1), 0.0), next(cur.size(), 0.0);
  double m = 0;
  for (std::int64_t p = n1; p >= 1; --p) {
    for (std::int64_t q = n2; q >= 1; --q) {
      double l = p == n1 && q == n2 ? 1.0 : 0.0;
      if (q < n2) l += cur[q + 1] * c1(p - 1, q);
      if (p < n1) l += next[q] * c1(p, q - 1);
      if (p < n1 && q < n2) l -= next[q + 1] * c2(p, q);
      cur[q] = l;
      const double cb = abar[cell(p - 1, q - 1)];
      m += std::fabs(l) * ((std::fabs(K[p * W + q - 1]) + std::fabs(K[(p - 1) * W + q])) * (1 + cb / 2 + cb * cb / 12) +
                           std::fabs(K[(p - 1) * W + q - 1]) * (1 + cb * cb / 12));
    }
    cur.swap(next);
  }
  k_out = K[n1 * W + n2], m_out = 2 * m;
}

void SigKernel::reference(const Instance& in, std::vector<std::vector<double>>& out,
                          std::vector<std::vector<double>>& mag) const {
  const std::int64_t B1 = in.sizes.at("B1"), B2 = in.sizes.at("B2"), L1 = in.sizes.at("L1"), L2 = in.sizes.at("L2"),
                     D = in.sizes.at("D");
  const int lambda = static_cast<int>(in.sizes.at("DYADIC"));
  std::vector<double> k(static_cast<std::size_t>(B1 * B2)), m(k.size());
  parallel_for(B1 * B2, [&](std::int64_t p0, std::int64_t p1) {
    std::vector<double> grid;
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t a = p / B2, b = p % B2;
      sigkernel_pair(&in.tensors[0][a * L1 * D], &in.tensors[1][b * L2 * D], L1, L2, D, lambda, k[p], m[p], grid);
    }
  });
  out = tensor_list(std::move(k));
  mag = tensor_list(std::move(m));
}

}  // namespace

std::shared_ptr<Problem> make_signature_problem() { return std::make_shared<Signature>(); }
std::shared_ptr<Problem> make_sigkernel_problem() { return std::make_shared<SigKernel>(); }

}  // namespace kforge
