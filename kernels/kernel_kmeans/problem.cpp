// kernel_kmeans: one Lloyd iteration of k-means in the feature space of a kernel, as a
// kernel-matrix product and reductions, never the N x N matrix. Scalar `kind` selects the kernel
// (not `kernel`: a reserved word in OpenCL C, and scalars are the kernels' argument names):
//   0  RBF         k(x, y) = exp(-gamma ||x - y||^2)
//   1  polynomial  k(x, y) = (gamma <x, y> + coef0)^degree, degree an integer in 1..8
// (a scalar argument: one compiled kernel serves both). Given points X (N,D) and current labels L (N, K clusters), for every point i and
// cluster c (|c| points, S_ic = sum_{j in c} k(x_i, x_j)):
//   DIST (N,K)  ||phi(x_i) - mu_c||^2 = k(x_i,x_i) - 2 S_ic / |c| + (1/|c|^2) sum_{j in c} S_jc
//   NEWL (N)    argmin_c DIST_ic, ties to the lowest c
//   SYNC (1)    zero on entry and on exit (inout): the blocks count themselves in it and the last
//               one runs the second, O(N K) pass (the cluster terms and the argmin); CUTLASS's
//               split-K semaphore convention, since one launch has no grid-wide barrier.
// An empty cluster is infinitely far: DIST = FLT_MAX (finite, so it is compared exactly).
// Labels are fp32 values, exact below 2^24, so N <= 2^24. fp32 only.
#include <cblas.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <thread>

#include "kforge/alternative_answers.hpp"
#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/rng.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

constexpr double kU = 0x1p-24;  // fp32 unit roundoff: the verifier's bound is kU * magnitude
constexpr std::size_t kX = 0, kL = 1, kDist = 2, kNewl = 3, kSync = 4;

class KernelKmeans final : public Problem, public AlternativeAnswers {
 public:
  std::string name() const override { return "kernel_kmeans"; }
  std::string description() const override {
    return "one kernel k-means (Lloyd) step, scalar kind: 0 RBF exp(-gamma |x-y|^2), 1 polynomial "
           "(gamma <x,y> + coef0)^degree (degree 1..8): X (N,D), labels L (N) -> feature-space distances "
           "DIST (N,K), new labels NEWL (N); SYNC (1) zero in and out";
  }
  std::vector<std::string> size_names() const override { return {"N", "D", "K"}; }
  Sizes default_sizes() const override { return {{"N", 4096}, {"D", 3}, {"K", 8}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"L", Role::in}, {"DIST", Role::out}, {"NEWL", Role::out}, {"SYNC", Role::inout}};
  }
  std::vector<std::string> scalar_names() const override { return {"gamma", "kind", "degree", "coef0"}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t N = s.at("N");
    switch (t) {
      case kX: return N * s.at("D");
      case kDist: return N * s.at("K");
      case kSync: return 1;
      default: return N;
    }
  }
  // RBF: a wide kernel (most pairs matter) and a narrow one (each point mostly sees itself).
  // Every third trial (2, 5, 8: the thorough run's third, and fuzzed shapes) is polynomial, with
  // degree 1..4 and coef0 1, 0 or -0.5 in turn; trials 0 and 1 stay RBF (kernel_kmeans_dist runs
  // them). degree and coef0 are in every trial, so a user who fixes `--scalar kind=1` gets
  // polynomial trials with varied gamma, degree and coef0 (fixed scalars override the schedule).
  Scalars scalars_for_trial(int trial) const override {
    static constexpr double kCoef0[] = {1.0, 0.0, 1.0, -0.5};
    return {{"gamma", trial % 2 ? 2.0 : 0.1},
            {"kind", trial % 3 == 2 ? 1.0 : 0.0},
            {"degree", static_cast<double>(trial % 4 + 1)},
            {"coef0", kCoef0[trial % 4]}};
  }
  // degree <= 8: the bound grows with it (about 2 degree u relative, see reference()) and fp32
  // overflows soon after (inputs are scaled to |x| <= 1, so |gamma <x,y> + coef0| <= gamma D +
  // |coef0|, and (2 * 1024 + 1)^8 ~ 3e26 is still finite); an integer so that a negative base
  // has a real power, computed by repeated products.
  void check_scalars(const Scalars& s) const override {
    Problem::check_scalars(s);
    if (s.count("gamma") && s.at("gamma") < 0)
      throw UsageError("scalar gamma=" + std::to_string(s.at("gamma")) + " is negative: the kernel needs gamma >= 0");
    if (s.count("kind") && s.at("kind") != 0 && s.at("kind") != 1)
      throw UsageError("scalar kind=" + std::to_string(s.at("kind")) + " must be 0 (RBF) or 1 (polynomial)");
    if (s.count("degree")) {
      const double p = s.at("degree");
      if (p != std::floor(p) || p < 1 || p > 8)
        throw UsageError("scalar degree=" + std::to_string(p) +
                         " must be an integer from 1 to 8 (the polynomial kernel's power; above 8 fp32 overflows "
                         "and the error bound grows too wide)");
    }
  }
  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    if (s.at("N") > (1 << 24))
      throw UsageError("size N=" + std::to_string(s.at("N")) + " is too large: labels are fp32, exact up to 16777216");
    if (s.at("K") > s.at("N") || s.at("K") > 256)
      throw UsageError("size K=" + std::to_string(s.at("K")) + " must be at most N and at most 256 (the kernels' limit)");
    if (s.at("D") > 1024) throw UsageError("size D=" + std::to_string(s.at("D")) + " is above 1024, the kernels' limit");
  }
  // Labels uniform in [0, K), every cluster given at least one point; SYNC zero. For the
  // polynomial kernel X is scaled by a power of two (exact) to |x| <= 1, keeping the
  // distribution's shape: the power of a wide-distributed dot product would overflow fp32.
  void condition_inputs(Instance& in, std::uint64_t seed, int trial) const override {
    const std::int64_t N = in.sizes.at("N"), K = in.sizes.at("K");
    if (is_poly(in.scalars)) {
      double top = 0;
      for (double v : in.tensors[kX]) top = std::max(top, std::fabs(v));
      if (top > 1) {
        const double scale = std::ldexp(1.0, -std::ilogb(top) - 1);
        for (double& v : in.tensors[kX]) v *= scale;
      }
    }
    auto& L = in.tensors[kL];
    for (std::int64_t i = 0; i < N; ++i) L[i] = static_cast<double>(random_bits(seed, 0x4b4d + trial, i) % K);
    for (std::int64_t c = 0; c < K; ++c) L[(c * N) / K] = static_cast<double>(c);
    in.tensors[kSync].assign(1, 0.0);
  }
  // X as matrix rows of D; labels and the counter as drawn (conditioned).
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {s.at("D"), -1, -1, -1, -1}; }
  // A label swaps with another point's different label (the cluster sizes stay, every cluster
  // stays non-empty); SYNC is not an input value (it must be zero) and stays.
  void perturb(Instance& in, std::size_t t, std::size_t i) const override {
    if (t == kSync) return;
    if (t != kL) return Problem::perturb(in, t, i);
    auto& L = in.tensors[kL];
    for (std::size_t k = 1; k < L.size(); ++k) {
      const std::size_t j = (i + k) % L.size();
      if (L[j] != L[i]) return std::swap(L[i], L[j]);
    }
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override;
  void accept_alternatives(const Instance& in, const std::vector<std::vector<double>>& got,
                           std::vector<std::vector<double>>& ref) const override;

  // The magnitude carries the whole error scale (see reference()), so gamma_n is taken at n = 1.
  double reduction_length(const Sizes&) const override { return 1; }
  // Per pair: D subtractions and FMAs, the exp and the scaled sum, counted as 2 D + 8 (as
  // lazy_reduce); the second pass's 4 N K is noise beside it.
  double flops(const Sizes& s) const override {
    const double N = s.at("N");
    return (2.0 * s.at("D") + 8) * N * N + 4.0 * N * s.at("K");
  }
  double bytes(const Sizes& s, DType t) const override {
    double e = 0;
    for (std::size_t k = 0; k < tensors().size(); ++k) e += static_cast<double>(tensor_elements(k, s));
    return e * dtype_size(t);
  }
  std::function<void()> baseline(const Instance& in, int threads) const override;
  std::string baseline_name() const override { return "explicit_gram_openblas"; }

  static bool is_poly(const Scalars& s) { return s.count("kind") && s.at("kind") == 1; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/kernel_kmeans/kernel_kmeans_cpu.json", "kernels/kernel_kmeans/kernel_kmeans_opencl.json",
            "kernels/kernel_kmeans/kernel_kmeans_cuda.json"};
  }
};

// The same formula in double, with per-element error scales in units of kU (|kernel - exact| <=
// kU * magnitude), from a first-order analysis that holds for any summation order:
//   k_ij     RBF: fp32 ||x_i - x_j||^2 errs by (D + 1) u d2, gamma * d2 once more, exp by a few
//            ulp: e_ij = k_ij (gamma (D + 3) d2 + 8)
//            polynomial, b = gamma s + coef0, s = <x_i, x_j>, a = sum_d |x_id x_jd|, p = degree:
//            fl(s) errs by D u a, gamma * s and + coef0 (or one FMA) add u (gamma a + |b|), so
//            fl(b) errs by eb = gamma (D + 1) a + |b|; the p - 1 products of b^p add (p - 1) u
//            |b|^p and carry p |b|^(p-1) eb: e_ij = p |b|^(p-1) gamma (D + 1) a + (2 p + 1) |b|^p
//            (2 p - 1 plus 2 for the reordering of the products)
//   S_ic     sum of |c| terms: eS = sum_j e_ij + (|c| + 1) S_ic   (Higham's gamma_n, any order)
//   A_ic     S_ic / |c|: eA = eS / |c| + A
//   z_c      (sum_{i in c} S_ic) / |c| / |c|: ez = (sum_i eS_ic + (|c| + 1) sum_i S_ic) / |c|^2 + 2 z
//   DIST_ic  k_ii - 2 A_ic + z_c: e_ii + 2 eA + ez + 3 (k_ii + 2 A + z)
// all doubled for safety, as lazy_reduce does. The sums behind z are the reduction of length N.
void KernelKmeans::reference(const Instance& in, std::vector<std::vector<double>>& out,
                             std::vector<std::vector<double>>& mag) const {
  const std::int64_t N = in.sizes.at("N"), D = in.sizes.at("D"), K = in.sizes.at("K");
  const double g = in.scalars.at("gamma");
  const bool poly = is_poly(in.scalars);
  const int p = poly ? static_cast<int>(in.scalars.at("degree")) : 1;
  const double c0 = poly ? in.scalars.at("coef0") : 0.0;
  const auto& X = in.tensors[kX];
  const auto& L = in.tensors[kL];
  std::vector<std::int64_t> lab(static_cast<std::size_t>(N));
  std::vector<double> n(static_cast<std::size_t>(K), 0.0);
  for (std::int64_t i = 0; i < N; ++i) {
    lab[i] = std::clamp<std::int64_t>(static_cast<std::int64_t>(L[i]), 0, K - 1);
    n[lab[i]] += 1;
  }
  auto kern = [&](std::int64_t i, std::int64_t j, double& err) {
    if (poly) {
      double s = 0, a = 0;
      for (std::int64_t d = 0; d < D; ++d) s += X[i * D + d] * X[j * D + d], a += std::fabs(X[i * D + d] * X[j * D + d]);
      const double b = g * s + c0, ab = std::fabs(b);
      // Below fp32's normal range every product, sum and power step may round to the subnormal
      // grid (absolute error up to 2^-150 each, 2^-126 in units of kU): the structured check's
      // subnormal inputs make every fp32 kernel value 0 while the exact ones are ~1e-156 apart.
      const double under = static_cast<double>(D + 1) * 0x1p-126;
      err = p * std::pow(ab, p - 1) * g * (static_cast<double>(D + 1) * a + under) + (2 * p + 1) * std::pow(ab, p) +
            p * 0x1p-126;
      return std::pow(b, p);
    }
    double d2 = 0;
    for (std::int64_t d = 0; d < D; ++d) d2 += (X[i * D + d] - X[j * D + d]) * (X[i * D + d] - X[j * D + d]);
    const double k = std::exp(-g * d2);
    err = k * (g * static_cast<double>(D + 3) * d2 + 8);
    return k;
  };
  std::vector<double> S(static_cast<std::size_t>(N * K), 0.0), eS(S.size(), 0.0), kii(N), ekii(N);
  std::vector<double> aS(poly ? S.size() : 0, 0.0);  // sum_{j in c} |k_ij|: fp32 overflow, below
  parallel_for(N, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      double* s = &S[i * K];
      double* e = &eS[i * K];
      for (std::int64_t j = 0; j < N; ++j) {
        double err;
        const double k = kern(i, j, err);
        s[lab[j]] += k;
        if (poly) aS[i * K + lab[j]] += std::fabs(k);
        e[lab[j]] += err + (n[lab[j]] + 1) * std::fabs(k);  // polynomial terms may be negative
      }
      kii[i] = kern(i, i, ekii[i]);
    }
  });
  std::vector<double> z(static_cast<std::size_t>(K), 0.0), ez(z.size(), 0.0), sumS(z.size(), 0.0);
  std::vector<double> absS(z.size(), 0.0);
  for (std::int64_t i = 0; i < N; ++i) {
    const std::int64_t ic = i * K + lab[i];
    sumS[lab[i]] += S[ic], absS[lab[i]] += std::fabs(S[ic]), ez[lab[i]] += eS[ic];
  }
  for (std::int64_t c = 0; c < K; ++c) {
    if (n[c] == 0) continue;
    z[c] = sumS[c] / (n[c] * n[c]);
    ez[c] = (ez[c] + (n[c] + 1) * absS[c]) / (n[c] * n[c]) + 2 * std::fabs(z[c]);
  }
  std::vector<double> dist(S.size()), m(S.size()), newl(static_cast<std::size_t>(N)), zeros(newl.size(), 0.0);
  for (std::int64_t i = 0; i < N; ++i) {
    std::int64_t best = 0;
    for (std::int64_t c = 0; c < K; ++c) {
      const std::int64_t ic = i * K + c;
      if (n[c] == 0) {
        dist[ic] = FLT_MAX, m[ic] = 0;
      } else {
        const double A = S[ic] / n[c], eA = eS[ic] / n[c] + std::fabs(A);
        dist[ic] = kii[i] - 2 * A + z[c];
        m[ic] = 2 * (ekii[i] + 2 * eA + ez[c] + 3 * (std::fabs(kii[i]) + 2 * std::fabs(A) + std::fabs(z[c])));
      }
      if (dist[ic] < dist[i * K + best]) best = c;  // strict: a tie keeps the lowest cluster
    }
    newl[i] = static_cast<double>(best);
  }
  // The polynomial kernel can leave fp32's range (the structured check's near-overflow inputs,
  // or a large gamma, degree or D): where any dot product (bounded by gamma D max|x|^2 + |coef0|),
  // kernel value or any sum of them (by a cluster's sum_{i,j in c} |k_ij|) could pass FLT_MAX / 4,
  // the fp32 step is undefined and every output is NaN in the reference, which accepts any value.
  if (poly) {
    double top = 0, xmax = 0;
    for (double v : X) xmax = std::max(xmax, std::fabs(v));
    std::vector<double> total(static_cast<std::size_t>(K), 0.0);
    for (std::int64_t i = 0; i < N; ++i) {
      for (std::int64_t c = 0; c < K; ++c) total[c] += aS[i * K + c];
      top = std::max(top, std::fabs(kii[i]));
    }
    for (double t : total) top = std::max(top, t);
    top = std::max(top, g * static_cast<double>(D) * xmax * xmax + std::fabs(c0));
    if (!(top <= FLT_MAX / 4)) {
      std::fill(dist.begin(), dist.end(), NAN), std::fill(m.begin(), m.end(), 0.0);
      std::fill(newl.begin(), newl.end(), NAN);
    }
  }
  out = tensor_list(std::move(dist), std::move(newl), std::vector<double>{0.0});
  mag = tensor_list(std::move(m), std::move(zeros), std::vector<double>{0.0});
}

// A kernel's label is right where the exact distance to its cluster lies within both bounds of
// the exact best one: the kernel's own distances each err by at most their bound, so only such
// a true near-tie can flip the argmin. Every other label must equal the reference's.
void KernelKmeans::accept_alternatives(const Instance& in, const std::vector<std::vector<double>>& got,
                                       std::vector<std::vector<double>>& ref) const {
  if (got.size() < 2 || ref.size() < 2) return;
  const std::int64_t N = in.sizes.at("N"), K = in.sizes.at("K");
  std::vector<std::vector<double>> exact, mag;  // the magnitudes, only if some label differs
  for (std::int64_t i = 0; i < N; ++i) {
    const double g = got[1][i], r = ref[1][i];
    if (g == r || !(g >= 0 && g < static_cast<double>(K) && g == std::floor(g))) continue;
    if (mag.empty()) reference(in, exact, mag);
    const auto gi = i * K + static_cast<std::int64_t>(g), ri = i * K + static_cast<std::int64_t>(r);
    if (std::fabs(exact[0][gi] - exact[0][ri]) <= kU * (mag[0][gi] + mag[0][ri])) ref[1][i] = g;
  }
}

// The step as a user writes it with a BLAS (scikit-learn's rbf_kernel or polynomial_kernel, then
// a product): the Gram matrix G (N x N floats) from X X^T (sgemm), then exp over it with the
// squared norms (RBF) or the power (polynomial; k(x_i, x_i) is then G's diagonal, not 1), S = G onehot(L)
// (sgemm), then the cluster terms and the argmin. G is rebuilt in every call, as kforge's kernel
// recomputes its values: one step from X and L each. Above 2 GiB of Gram matrix there is no
// baseline (it would not fit beside the rest on a 24 GiB machine).
std::function<void()> KernelKmeans::baseline(const Instance& in, int threads) const {
  const std::int64_t N = in.sizes.at("N"), D = in.sizes.at("D"), K = in.sizes.at("K");
  if (N * N * 4 > (std::int64_t{2} << 30)) return {};
  const float g = static_cast<float>(in.scalars.at("gamma"));
  const bool poly = is_poly(in.scalars);
  const int p = poly ? static_cast<int>(in.scalars.at("degree")) : 1;
  const float c0 = poly ? static_cast<float>(in.scalars.at("coef0")) : 0.0f;
  auto x = std::make_shared<std::vector<float>>(in.tensors[kX].begin(), in.tensors[kX].end());
  auto lab = std::make_shared<std::vector<int>>(in.tensors[kL].begin(), in.tensors[kL].end());
  auto G = std::make_shared<std::vector<float>>(static_cast<std::size_t>(N * N));
  auto onehot = std::make_shared<std::vector<float>>(static_cast<std::size_t>(N * K));
  auto S = std::make_shared<std::vector<float>>(static_cast<std::size_t>(N * K));
  auto out = std::make_shared<std::vector<float>>(static_cast<std::size_t>(N * K + N));
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  return [=] {
    openblas_set_num_threads(nthreads);
    const int n = static_cast<int>(N), d = static_cast<int>(D), k = static_cast<int>(K);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0f, x->data(), d, x->data(), d, 0.0f, G->data(), n);
    std::vector<float> sq(static_cast<std::size_t>(N));
    for (std::int64_t i = 0; i < N; ++i) sq[i] = (*G)[i * N + i];
    parallel_for(N, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          float& v = (*G)[i * N + j];
          if (poly) {
            const float b = g * v + c0;
            v = b;
            for (int e = 1; e < p; ++e) v *= b;
          } else {
            v = std::exp(-g * std::max(0.0f, sq[i] + sq[j] - 2 * v));
          }
        }
    });
    if (poly)
      for (std::int64_t i = 0; i < N; ++i) sq[i] = (*G)[i * N + i];  // k(x_i, x_i)
    std::fill(onehot->begin(), onehot->end(), 0.0f);
    std::vector<float> cnt(static_cast<std::size_t>(K), 0.0f), z(cnt.size(), 0.0f);
    for (std::int64_t i = 0; i < N; ++i) (*onehot)[i * K + (*lab)[i]] = 1.0f, cnt[(*lab)[i]] += 1.0f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, k, n, 1.0f, G->data(), n, onehot->data(), k, 0.0f,
                S->data(), k);
    for (std::int64_t i = 0; i < N; ++i) z[(*lab)[i]] += (*S)[i * K + (*lab)[i]];
    for (std::int64_t i = 0; i < N; ++i) {
      int best = 0;
      for (std::int64_t c = 0; c < K; ++c) {
        float& dist = (*out)[i * K + c];
        dist = cnt[c] > 0 ? (poly ? sq[i] : 1.0f) - 2.0f * (*S)[i * K + c] / cnt[c] + z[c] / cnt[c] / cnt[c] : FLT_MAX;
        if (dist < (*out)[i * K + best]) best = static_cast<int>(c);
      }
      (*out)[N * K + i] = static_cast<float>(best);
    }
  };
}

}  // namespace

std::shared_ptr<Problem> make_kernel_kmeans_problem() { return std::make_shared<KernelKmeans>(); }

}  // namespace kforge
