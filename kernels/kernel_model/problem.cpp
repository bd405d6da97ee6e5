// kernel_svm and kernel_logreg: one fit of a kernel model at one lambda, the Gram matrix computed
// inside the kernel. Inputs X (N,D) and labels Y (N) in {-1, +1}; scalars lambda > 0 and gamma > 0
// (the RBF kernel k(x, z) = exp(-gamma |x - z|^2)). Outputs the model f(x) = sum_j A_j k(x, x_j) + B
// fitted by
//     minimize over (A, B):  J = (1/N) sum_i L(Y_i f_i) + (lambda/2) A^T K A,   f_i = f(x_i)
// (B unpenalized; src/kmodel's objective and losses: the svm is the hinge max(0, 1 - t), solved
// through its dual with C = 1 / (N lambda) and A_i = Y_i a_i; the logreg the logistic loss), and
// the decision values F = K A + B on the training rows. W is the kernel's workspace (scratch: the
// Gram matrix and a few vectors).
//
// Verification. The minimizer's A is not unique where K is singular (duplicate rows, or a smooth
// kernel on low-dimensional data: numerically low rank) and B is not protected by strong
// convexity (it is unpenalized; for the hinge it can be a whole interval), so comparing A, B or
// even F elementwise with a double solution could fail a right kernel or need a bound too loose
// to mean anything. The check is instead what makes an answer right by definition, computed in
// double from the kernel's own A and B with the exact K (accept_alternatives, below):
//   1. F is the model's: |F_i - (K A + B)_i| <= the fp32 evaluation bound of that sum;
//   2. logreg: (A, B) is optimal: with g_i = Y_i L'(Y_i f_i) and r = g + N lambda A, J's gradient
//      in the RKHS is (1/N) sum_i r_i k(., x_i), of norm |r|_K / N (|v|_K = sqrt(v^T K v)), and
//      its derivative in B is (1/N) sum_i g_i: both zero exactly at every minimizer. The relative
//      residuals |r|_K / (|g|_K + N lambda |A|_K) and |sum g| / |g|_1 must be within kKktTol
//      (src/kmodel's default stopping tolerance) plus what fp32 evaluation of f can move them (the
//      loss's slope is Lipschitz with constant c, so |dg_i| <= c |df_i|);
//   2. svm: the dual's KKT conditions (check_dual): a = Y A inside [0, C], y^T a = 0, libsvm's
//      maximal-violating-pair gap <= 1e-3 (its default stop), and B inside the interval the KKT
//      conditions allow, each within what fp32 rounding moves it by.
// Where they hold the kernel's outputs replace the reference's; otherwise they are compared with
// the double reference (the logreg: src/kmodel's spectral solver to a 1e-10 residual; the svm:
// src/kmodel's SMO to a gap of 1e-10) under a bound of a few fp32 ulps, so they fail and the
// message shows how far they are from the reference. The README derives what the checks imply.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "kforge/alternative_answers.hpp"
#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"
#include "kforge/problem.hpp"
#include "kforge/rng.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

constexpr std::size_t kX = 0, kY = 1, kF = 2, kA = 3, kB = 4, kW = 5;
constexpr double kU = 0x1p-24;     // fp32 unit roundoff
constexpr double kDelta = 0.5;     // src/kmodel's loss functions take a width (the Huberized hinge's); unused by the logistic
constexpr double kKktTol = 1e-4;   // the relative KKT residual an answer must reach (kmodel's --tol)

// The exact kernel matrix in double, by differences (not |x|^2 + |z|^2 - 2 x.z, which cancels for
// large or identical rows), and E_ij, the most an fp32 evaluation of exp(-gamma d2) errs by
// (D + 1 roundings in d2, one in gamma d2, a few ulps in exp; kernel_kmeans' analysis), in units of 1.
struct Gram {
  Eigen::MatrixXd k, e;
};
Gram exact_gram(const Instance& in) {
  const std::int64_t N = in.sizes.at("N"), D = in.sizes.at("D");
  const double g = in.scalars.at("gamma");
  const auto& X = in.tensors[kX];
  Gram G{Eigen::MatrixXd(N, N), Eigen::MatrixXd(N, N)};
  parallel_for(N, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t j = j0; j < j1; ++j)
      for (std::int64_t i = 0; i < N; ++i) {
        double d2 = 0;
        for (std::int64_t d = 0; d < D; ++d) d2 += (X[i * D + d] - X[j * D + d]) * (X[i * D + d] - X[j * D + d]);
        const double k = std::exp(-g * d2);
        G.k(i, j) = k;
        G.e(i, j) = kU * k * (g * static_cast<double>(D + 3) * d2 + 8);
      }
  });
  return G;
}

// The optimality check of the header, on a kernel's (F, A, B) or on the reference's.
struct Optimality {
  bool consistent = false, optimal = false;
  double residual_alpha = 0, residual_b = 0;  // relative, as kmodel::kkt_residual
  double allowance_alpha = 0, allowance_b = 0;  // what fp32 evaluation adds to kKktTol
  [[nodiscard]] bool accepted() const { return consistent && optimal; }
};
Optimality check_optimality(kmodel::Loss loss, const Instance& in, const Gram& G, const std::vector<double>& F,
                            const std::vector<double>& A, double b) {
  Optimality o;
  const std::int64_t N = in.sizes.at("N");
  const double nl = static_cast<double>(N) * in.scalars.at("lambda");
  const double c = kmodel::curvature_bound(loss, kDelta), nu = static_cast<double>(N + 2) * kU;
  if (!std::isfinite(b)) return o;
  for (std::int64_t j = 0; j < N; ++j)
    if (!std::isfinite(A[j]) || !std::isfinite(F[j])) return o;
  const Eigen::Map<const Eigen::VectorXd> a(A.data(), N);
  const Eigen::VectorXd f = (G.k * a).array() + b;
  const Eigen::VectorXd aa = a.cwiseAbs();
  // |fl(K A + B) - (K A + B)| <= sum_j E_ij |A_j| + gamma_{N+2} (sum_j k_ij |A_j| + |B|), doubled.
  const Eigen::VectorXd tf = 2 * ((G.e * aa).array() + nu * ((G.k * aa).array() + std::fabs(b)));
  o.consistent = true;
  for (std::int64_t i = 0; i < N; ++i) o.consistent = o.consistent && std::fabs(F[i] - f[i]) <= tf[i];
  // The residual in K's seminorm: |r|_K = sqrt(r^T K r) = N |RKHS gradient of J|, blind to
  // coefficients in K's null space (duplicate rows), which move neither f nor J: every minimizer
  // passes, not only the one in representer form.
  const auto& Y = in.tensors[kY];
  Eigen::VectorXd g(N), r(N), er(N);
  for (std::int64_t i = 0; i < N; ++i) {
    g[i] = Y[i] * kmodel::loss_slope(loss, kDelta, Y[i] * f[i]);
    r[i] = g[i] + nl * A[i];
    er[i] = c * tf[i] + 4 * kU * (std::fabs(g[i]) + nl * aa[i]);
  }
  auto knorm = [&](const Eigen::VectorXd& v) { return std::sqrt(std::max(0.0, v.dot(G.k * v))); };
  const double den = knorm(g) + nl * knorm(a), g1 = g.lpNorm<1>();
  // |r_kernel - r|_K <= sqrt(er^T K er): K >= 0 elementwise and |r_kernel - r| <= er.
  o.residual_alpha = den > 0 ? knorm(r) / den : 0;
  o.residual_b = g1 > 0 ? std::fabs(g.sum()) / g1 : 0;
  o.allowance_alpha = den > 0 ? knorm(er) / den : 0;
  o.allowance_b = g1 > 0 ? er.sum() / g1 : 0;
  o.optimal = o.residual_alpha <= kKktTol + o.allowance_alpha && o.residual_b <= kKktTol + o.allowance_b;
  return o;
}

// The hinge (kernel_svm): the SVM dual's optimality, in double from the kernel's own A and B.
// With alpha = A (alpha_t = y_t a_t, box [lo_t, hi_t] = [0, C] for y = +1, [-C, 0] for y = -1,
// C = 1 / (N lambda)) and v = y - K alpha (v_t = -y_t G_t, G = Q a - 1 libsvm's gradient):
//   feasible: alpha in its box within `band` (fp32 rounding of C: the kernel's C is
//     fl(1 / fl(N fl(lambda))), within a few u C), and |sum alpha| = |y^T a| within 4 N u C (each
//     fp32 pair step rounds two coefficients of size <= C; the drift is a random walk);
//   optimal: the maximal violating pair's gap m - M <= kGapTol + a_g, m = max of v over the rows
//     that may move up (alpha < hi), M = min over those that may move down (alpha > lo), rows
//     within `band` of a bound counting as on it; a_g = 2 max_t tf_t, twice the most the kernel's
//     fp32 v = y - K alpha can differ from the exact one at the two rows of the pair (tf: F's
//     bound, which also covers |B|'s rounding);
//   B inside the interval the KKT conditions allow: m - e <= B <= M + e, e = kGapTol + a_g
//     (a free row, in both sets, must then have y f = 1 within e; with no free row B may be
//     anywhere between the bounds).
// These are the KKT conditions of the box QP, so every minimizer passes (K singular included:
// coefficients traded between duplicate rows move neither v nor the sets' extremes' meaning).
constexpr double kGapTol = 1e-3;  // libsvm's default stopping gap (kforge kmodel svm's --tol)

struct DualCheck {
  bool consistent = false, feasible = false, optimal = false;
  double gap = 0, gap_allowance = 0, sum = 0, sum_allowance = 0, b_low = 0, b_high = 0;
  [[nodiscard]] bool accepted() const { return consistent && feasible && optimal; }
};
DualCheck check_dual(const Instance& in, const Gram& G, const std::vector<double>& F, const std::vector<double>& A,
                     double b) {
  DualCheck o;
  const std::int64_t N = in.sizes.at("N");
  const double C = 1 / (static_cast<double>(N) * in.scalars.at("lambda")), band = 8 * kU * C;
  if (!std::isfinite(b)) return o;
  std::int64_t nnz = 0;
  for (std::int64_t j = 0; j < N; ++j) {
    if (!std::isfinite(A[j]) || !std::isfinite(F[j])) return o;
    nnz += A[j] != 0;
  }
  // gamma over the nonzero A_j only: a product with A_j = 0 and its addition are exact, so in any
  // summation order a term meets at most nnz - 1 inexact additions (+ its product, + B).
  const double nu = static_cast<double>(nnz + 2) * kU;
  const Eigen::Map<const Eigen::VectorXd> a(A.data(), N);
  const Eigen::VectorXd ka = G.k * a, aa = a.cwiseAbs();
  const Eigen::VectorXd tf = 2 * ((G.e * aa).array() + nu * ((G.k * aa).array() + std::fabs(b)));
  o.consistent = true;
  for (std::int64_t i = 0; i < N; ++i) o.consistent = o.consistent && std::fabs(F[i] - (ka[i] + b)) <= tf[i];
  const auto& Y = in.tensors[kY];
  o.feasible = true;
  double m = -INFINITY, M = INFINITY;
  for (std::int64_t t = 0; t < N; ++t) {
    const double lo = Y[t] > 0 ? 0 : -C, hi = Y[t] > 0 ? C : 0, v = Y[t] - ka[t];
    o.feasible = o.feasible && A[t] >= lo - band && A[t] <= hi + band;
    o.sum += A[t];
    if (A[t] < hi - band) m = std::max(m, v);
    if (A[t] > lo + band) M = std::min(M, v);
  }
  o.sum_allowance = 4 * static_cast<double>(N) * kU * C;
  o.feasible = o.feasible && std::fabs(o.sum) <= o.sum_allowance;
  o.gap = m - M;
  o.gap_allowance = 2 * tf.maxCoeff();
  const double e = kGapTol + o.gap_allowance;
  o.b_low = m - e, o.b_high = M + e;
  o.optimal = o.gap <= e && b >= o.b_low && b <= o.b_high;
  return o;
}

class KernelModel final : public Problem, public AlternativeAnswers {
 public:
  explicit KernelModel(kmodel::Loss loss) : loss_(loss) {}
  std::string name() const override { return loss_ == kmodel::Loss::logistic ? "kernel_logreg" : "kernel_svm"; }
  std::string description() const override {
    return std::string("one fit of kernel ") +
           (loss_ == kmodel::Loss::logistic ? "logistic regression" : "SVM (hinge loss, the dual by SMO)") +
           " at one lambda, RBF kernel exp(-gamma |x-z|^2): X (N,D), labels Y (N) in {-1,+1} -> decision values "
           "F = K A + B (N), coefficients A (N), intercept B (1), minimizing (1/N) sum L(y f) + (lambda/2) A^T K A; "
           "W scratch (N*N + 8N)";
  }
  std::vector<std::string> size_names() const override { return {"N", "D"}; }
  Sizes default_sizes() const override { return {{"N", 1024}, {"D", 4}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"Y", Role::in}, {"F", Role::out}, {"A", Role::out}, {"B", Role::out}, {"W", Role::scratch}};
  }
  std::vector<std::string> scalar_names() const override { return {"lambda", "gamma"}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t N = s.at("N");
    switch (t) {
      case kX: return N * s.at("D");
      case kB: return 1;
      case kW: return N * N + 8 * N;
      default: return N;
    }
  }
  // lambda and gamma vary together; lambda >= 0.01 keeps the solve's condition number
  // 1 + 2 c / lambda (c: the loss's curvature bound) where a few hundred iterations suffice.
  Scalars scalars_for_trial(int trial) const override {
    static constexpr double kLambda[] = {0.05, 0.01, 0.2}, kGamma[] = {0.5, 2.0, 0.1, 1.0};
    return {{"lambda", kLambda[trial % 3]}, {"gamma", kGamma[trial % 4]}};
  }
  void check_scalars(const Scalars& s) const override {
    Problem::check_scalars(s);
    if (s.count("lambda") && !(s.at("lambda") >= 1e-6 && s.at("lambda") <= 1e6))
      throw UsageError("scalar lambda=" + std::to_string(s.at("lambda")) +
                       " is outside [1e-6, 1e6]: the regularization must be positive (the objective is then strongly "
                       "convex in f) and the solve's condition number grows like 1/lambda");
    if (s.count("gamma") && !(s.at("gamma") > 0))
      throw UsageError("scalar gamma=" + std::to_string(s.at("gamma")) +
                       " must be positive: the RBF kernel exp(-gamma |x-z|^2)");
  }
  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    if (s.at("N") < 2) throw UsageError("size N=" + std::to_string(s.at("N")) + " is below 2: the labels need both classes");
    if (s.at("N") > 16384)
      throw UsageError("size N=" + std::to_string(s.at("N")) + " is above 16384: the kernels keep the N x N Gram matrix");
    if (s.at("D") > 1024) throw UsageError("size D=" + std::to_string(s.at("D")) + " is above 1024, the kernels' limit");
  }
  // The reference's work: the Gram matrix (N^2 D) and the logreg's eigendecomposition (O(N^3);
  // the svm's SMO is O(N^2) per N steps, counted the same); so fuzzed shapes stay below N ~ 280.
  double fuzz_work(const Sizes& s) const override {
    const double N = static_cast<double>(s.at("N"));
    return N * N * (static_cast<double>(s.at("D")) + N / 4);
  }
  // Labels from the data, not coin flips: y = +1 where x_0 plus uniform noise passes a threshold
  // (about 60% positive, so the intercept matters), with row 0 positive and row 1 negative.
  void condition_inputs(Instance& in, std::uint64_t seed, int trial) const override {
    const std::int64_t N = in.sizes.at("N"), D = in.sizes.at("D");
    const auto& X = in.tensors[kX];
    double scale = 0;
    for (std::int64_t i = 0; i < N; ++i) scale = std::max(scale, std::fabs(X[i * D]));
    auto& Y = in.tensors[kY];
    for (std::int64_t i = 0; i < N; ++i) {
      const double u = static_cast<double>(random_bits(seed, 0x5e9 + trial, i) % 2001) / 1000.0 - 1.0;
      Y[i] = X[i * D] + 0.7 * scale * u > -0.25 * scale ? 1.0 : -1.0;
    }
    Y[0] = 1.0, Y[1] = -1.0;
  }
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {s.at("D"), -1, -1, -1, -1, -1}; }
  // A label flips (it must stay -1 or +1); X moves as usual.
  void perturb(Instance& in, std::size_t t, std::size_t i) const override {
    if (t == kY) {
      in.tensors[kY][i] = -in.tensors[kY][i];
      return;
    }
    Problem::perturb(in, t, i);
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override;
  void accept_alternatives(const Instance& in, const std::vector<std::vector<double>>& got,
                           std::vector<std::vector<double>>& ref) const override {
    if (got.size() < 3 || ref.size() < 3) return;
    if (got[2].empty() || got[0].size() != got[1].size()) return;
    const Gram G = exact_gram(in);
    const bool ok = loss_ == kmodel::Loss::hinge ? check_dual(in, G, got[0], got[1], got[2][0]).accepted()
                                                 : check_optimality(loss_, in, G, got[0], got[1], got[2][0]).accepted();
    if (ok) ref = got;
  }

  // The magnitudes carry the whole scale (reference()), so gamma_n is taken at n = 1.
  double reduction_length(const Sizes&) const override { return 1; }
  // The Gram matrix (3 D + 10 per pair: differences, squares, the exp) and one product with it
  // (2 N^2): the least any solver does. The iterations' products come on top (a few hundred),
  // so the SOL fraction is a lower bound on the kernel's real rate.
  double flops(const Sizes& s) const override {
    const double N = static_cast<double>(s.at("N"));
    return (3.0 * static_cast<double>(s.at("D")) + 12) * N * N;
  }
  double bytes(const Sizes& s, DType t) const override {
    const double N = static_cast<double>(s.at("N"));
    return (N * static_cast<double>(s.at("D")) + 4 * N + 1) * dtype_size(t);
  }
  std::function<void()> baseline(const Instance& in, int threads) const override;
  std::string baseline_name() const override {
    return loss_ == kmodel::Loss::hinge ? "kmodel_smo_double" : "kmodel_spectral_double";
  }

  std::vector<std::string> kernel_specs() const override {
    const std::string n = name();
    return {"kernels/kernel_model/" + n + "_cpu.json", "kernels/kernel_model/" + n + "_opencl.json",
            "kernels/kernel_model/" + n + "_cuda.json"};
  }

 private:
  kmodel::Loss loss_;
};

Eigen::MatrixXd rows_of(const Instance& in) {
  const std::int64_t N = in.sizes.at("N"), D = in.sizes.at("D");
  Eigen::MatrixXd x(N, D);
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t d = 0; d < D; ++d) x(i, d) = in.tensors[kX][i * D + d];
  return x;
}

// src/kmodel's solver on the exact Gram matrix: the svm's SMO to a gap of 1e-10; the logreg's
// spectral one (one eigendecomposition, majorization-minimization) to a relative KKT residual of 1e-10. Magnitudes of 4 |value|: a bound of about 5 fp32 ulps, met only
// by an answer accepted by the optimality check (see the header).
void KernelModel::reference(const Instance& in, std::vector<std::vector<double>>& out,
                            std::vector<std::vector<double>>& mag) const {
  const std::int64_t N = in.sizes.at("N");
  const Gram G = exact_gram(in);
  const Eigen::MatrixXd& k = G.k;
  Eigen::VectorXd y(N);
  for (std::int64_t i = 0; i < N; ++i) y[i] = in.tensors[kY][i];
  kmodel::SolverOptions o;
  o.loss = loss_;
  o.delta = kDelta;
  o.tol = 1e-10;
  o.max_iter = 200000;
  const double lambda = in.scalars.at("lambda");
  std::vector<double> F, A, B;
  if (loss_ == kmodel::Loss::hinge) {
    // SMO in double (kforge kmodel svm's solver, with its shrinking) to a gap of 1e-10, or 100 N
    // steps: structured inputs (many identical rows) can make it crawl below 1e-4 (10^7 steps,
    // 65 s at N = 2000, ended at 4e-6). Only an answer the check rejects is compared with it.
    o.tol = 1e-10;
    o.max_iter = static_cast<int>(std::min<std::int64_t>(100 * N, 1 << 30));
    const auto fit = kmodel::fit_path_smo(k, y, o, {lambda}, false);
    const Eigen::VectorXd f = (k * fit[0].alpha).array() + fit[0].b;
    F.assign(f.data(), f.data() + N), A.assign(fit[0].alpha.data(), fit[0].alpha.data() + N), B = {fit[0].b};
  } else {
  // LAPACK's partial spectrum (MRRR), or every eigenpair by Eigen where MRRR gives up (dstemr on
  // a tight cluster of tiny eigenvalues: duplicate rows, an almost constant kernel).
  kmodel::Spectrum sp;
  try {
    sp = kmodel::decompose(k, kmodel::EigenSolver::lapack, o.rank_tol);
  } catch (const std::runtime_error&) {
    sp = kmodel::decompose(k, kmodel::EigenSolver::eigen);
  }
  const auto fit = kmodel::fit_path(sp, y, o, {lambda}, false);
  const Eigen::VectorXd f = (k * fit[0].alpha).array() + fit[0].b;
  F.assign(f.data(), f.data() + N), A.assign(fit[0].alpha.data(), fit[0].alpha.data() + N), B = {fit[0].b};
  }
  auto scaled = [](const std::vector<double>& v) {
    std::vector<double> m(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) m[i] = 4 * std::fabs(v[i]);
    return m;
  };
  mag = tensor_list(scaled(F), scaled(A), scaled(B));
  out = tensor_list(std::move(F), std::move(A), std::move(B));
}

// What a user would call otherwise: src/kmodel's fit in double to its default tolerance, at
// `threads`: the svm's SMO (one thread) on the Gram matrix; the logreg's Gram matrix,
// eigendecomposition by OpenBLAS's LAPACK and majorization-minimization.
std::function<void()> KernelModel::baseline(const Instance& in, int threads) const {
  const std::int64_t N = in.sizes.at("N");
  if (N > 8192) return {};
  auto x = std::make_shared<Eigen::MatrixXd>(rows_of(in));
  auto y = std::make_shared<Eigen::VectorXd>(N);
  for (std::int64_t i = 0; i < N; ++i) (*y)[i] = in.tensors[kY][i];
  kmodel::KernelFunction kf;
  kf.gamma = in.scalars.at("gamma");
  kmodel::SolverOptions o;
  o.loss = loss_;
  o.delta = kDelta;
  o.single_precision_steps = false;  // the double baseline, as named
  const double lambda = in.scalars.at("lambda");
  const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  if (loss_ == kmodel::Loss::hinge)
    return [=] {  // SMO (one thread) at kforge kmodel svm's default gap 1e-3
      openblas_set_num_threads(nthreads);
      const Eigen::MatrixXd k = kmodel::gram(kf, *x, *x);
      (void)kmodel::fit_path_smo(k, *y, o, {lambda}, false);
    };
  return [=] {
    openblas_set_num_threads(nthreads);
    const Eigen::MatrixXd k = kmodel::gram(kf, *x, *x);
    (void)kmodel::fit_path(kmodel::decompose(k, kmodel::EigenSolver::lapack, o.rank_tol), *y, o, {lambda}, false);
  };
}

}  // namespace

std::shared_ptr<Problem> make_kernel_svm_problem() { return std::make_shared<KernelModel>(kmodel::Loss::hinge); }
std::shared_ptr<Problem> make_kernel_logreg_problem() { return std::make_shared<KernelModel>(kmodel::Loss::logistic); }

}  // namespace kforge
