// The hinge loss's SMO path: its answer satisfies the dual KKT conditions checked here from K and
// y directly, primal and dual objectives agree, it equals an independent dual solver (projected
// gradient, then an exact solve on the partition it found), warm paths equal cold fits, and
// separable data is classified perfectly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kforge/kmodel.hpp"
#include "kmodel/kmodel_synthetic.hpp"

namespace kforge::kmodel {
namespace {

struct Case {
  int n, d;
  KernelFunction::Kind kind;
  double lambda;
};

// Seeds differ per case: nothing is tuned to one draw.
const Case kCases[] = {{67, 3, KernelFunction::Kind::rbf, 3e-3},   {131, 4, KernelFunction::Kind::rbf, 2e-4},
                       {189, 2, KernelFunction::Kind::rbf, 5e-2},  {97, 5, KernelFunction::Kind::linear, 1e-2},
                       {153, 3, KernelFunction::Kind::linear, 7e-4}};

Eigen::MatrixXd kernel_of(const Case& c, const Dataset& d) {
  const double gamma = c.kind == KernelFunction::Kind::rbf ? gamma_scale(d.x) : 1;
  return gram({c.kind, gamma}, d.x, d.x);
}

SolverOptions tight() {
  SolverOptions o;
  o.loss = Loss::hinge;
  o.tol = 1e-10;
  return o;
}

// The dual KKT conditions of a = y * alpha at C = 1/(n lambda), from K and y only: 0 <= a <= C,
// y^T a = 0, and with f = K alpha + b: a = 0 -> y f >= 1, 0 < a < C -> y f = 1, a = C -> y f <= 1.
// Returns the largest violation (margins in units of the margin, a in units of C).
double kkt_violation(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, double lambda, const Eigen::VectorXd& alpha,
                     double b) {
  const double c = 1 / (static_cast<double>(y.size()) * lambda);
  const Eigen::VectorXd f = (k * alpha).array() + b;
  double worst = std::abs((alpha.array()).sum()) / c;  // y^T a = sum alpha
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    const double a = y[i] * alpha[i], m = y[i] * f[i];
    worst = std::max({worst, -a / c, (a - c) / c});
    if (a <= 1e-12 * c) worst = std::max(worst, 1 - m);
    else if (a >= c * (1 - 1e-12)) worst = std::max(worst, m - 1);
    else worst = std::max(worst, std::abs(m - 1));
  }
  return worst;
}

// An independent dual solver: accelerated projected gradient on
//   (1/2) a^T Q a - 1^T a,  0 <= a <= C,  y^T a = 0
// (the projection onto the box and the hyperplane by bisection on its multiplier), then, on the
// partition it identifies (a = 0, free, a = C), the exact solution of the KKT equations:
// K_FF alpha_F + b 1 = y_F - K_FB alpha_B, 1^T alpha_F = -1^T alpha_B.
struct Reference {
  Eigen::VectorXd alpha;
  double b = 0;
};
Reference projected_gradient_then_exact(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, double lambda) {
  const Eigen::Index n = y.size();
  const double c = 1 / (static_cast<double>(n) * lambda);
  const Eigen::MatrixXd q = y.asDiagonal() * k * y.asDiagonal();
  const double step = 1 / Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(q, Eigen::EigenvaluesOnly).eigenvalues().maxCoeff();
  auto project = [&](const Eigen::VectorXd& z) {
    auto at = [&](double mu) { return (z - mu * y).cwiseMax(0.0).cwiseMin(c).eval(); };
    double lo = -1e3 * (c + z.cwiseAbs().maxCoeff()), hi = -lo;  // y^T at(mu) decreases in mu
    for (int it = 0; it < 64; ++it) {
      const double mid = (lo + hi) / 2;
      (y.dot(at(mid)) > 0 ? lo : hi) = mid;
    }
    return at((lo + hi) / 2);
  };
  Eigen::VectorXd a = Eigen::VectorXd::Zero(n), prev = a, z = a;
  double t = 1;
  for (int it = 0; it < 6000; ++it) {
    prev = a;
    a = project(z - step * (q * z - Eigen::VectorXd::Ones(n)));
    const double t_next = (1 + std::sqrt(1 + 4 * t * t)) / 2;
    z = a + ((t - 1) / t_next) * (a - prev);
    t = t_next;
  }
  std::vector<Eigen::Index> free;
  Eigen::VectorXd alpha = y.cwiseProduct(a);
  for (Eigen::Index i = 0; i < n; ++i) {
    if (a[i] < 1e-6 * c) alpha[i] = 0;
    else if (a[i] > c * (1 - 1e-6)) alpha[i] = y[i] * c;
    else free.push_back(i);
  }
  const Eigen::Index m = static_cast<Eigen::Index>(free.size());
  Eigen::MatrixXd sys = Eigen::MatrixXd::Zero(m + 1, m + 1);
  Eigen::VectorXd rhs(m + 1);
  Eigen::VectorXd bound = alpha;
  for (const Eigen::Index i : free) bound[i] = 0;
  const Eigen::VectorXd kb = k * bound;
  for (Eigen::Index r = 0; r < m; ++r) {
    for (Eigen::Index s = 0; s < m; ++s) sys(r, s) = k(free[r], free[s]);
    sys(r, m) = 1;
    sys(m, r) = 1;
    rhs[r] = y[free[r]] - kb[free[r]];
  }
  rhs[m] = -bound.sum();
  Reference out{bound, 0};
  if (m == 0) return out;  // no free vector: the test's partition check fails loudly
  const Eigen::VectorXd sol = sys.fullPivLu().solve(rhs);
  for (Eigen::Index r = 0; r < m; ++r) out.alpha[free[r]] = sol[r];
  out.b = sol[m];
  return out;
}

class SmoCase : public ::testing::TestWithParam<Case> {};

TEST_P(SmoCase, SatisfiesTheDualKktAndZeroDualityGap) {
  const Case c = GetParam();
  const Dataset data = test::blobs(c.n, c.d, 0.6, 0.1, /*seed=*/static_cast<std::uint64_t>(c.n * 7 + c.d));
  const Eigen::MatrixXd k = kernel_of(c, data);
  const Fit fit = fit_path_smo(k, data.y, tight(), {c.lambda}).at(0);
  ASSERT_TRUE(fit.converged) << "gap " << fit.kkt << " after " << fit.iterations;
  EXPECT_LE(kkt_violation(k, data.y, c.lambda, fit.alpha, fit.b), 1e-8);
  EXPECT_LE(kkt_residual(k, data.y, tight(), c.lambda, fit.alpha, fit.b), 1e-8);  // the library's own check
  // Primal C sum hinge + (1/2) alpha^T K alpha against dual 1^T a - (1/2) alpha^T K alpha.
  const double cc = 1 / (c.n * c.lambda);
  const Eigen::VectorXd f = (k * fit.alpha).array() + fit.b;
  const double quad = fit.alpha.dot(k * fit.alpha);
  const double primal = cc * (1 - data.y.cwiseProduct(f).array()).cwiseMax(0.0).sum() + quad / 2;
  const double dual = data.y.dot(fit.alpha) - quad / 2;
  EXPECT_NEAR(primal, dual, 1e-8 * primal);
  EXPECT_NEAR(fit.objective, primal * c.lambda, 1e-9 * primal * c.lambda);  // (1/n) sum + (lambda/2) quad
  EXPECT_GT(fit.support_vectors, 0);
  EXPECT_LT(fit.support_vectors, c.n + 1);
}

TEST_P(SmoCase, EqualsAnIndependentDualSolver) {
  const Case c = GetParam();
  const Dataset data = test::blobs(c.n, c.d, 0.6, 0.1, /*seed=*/static_cast<std::uint64_t>(c.n * 7 + c.d));
  const Eigen::MatrixXd k = kernel_of(c, data);
  const Fit fit = fit_path_smo(k, data.y, tight(), {c.lambda}).at(0);
  const Reference ref = projected_gradient_then_exact(k, data.y, c.lambda);
  ASSERT_LE(kkt_violation(k, data.y, c.lambda, ref.alpha, ref.b), 1e-8) << "the reference did not find the optimum";
  // The decision values are unique (alpha is too for the rbf kernel, not for a singular linear one).
  const Eigen::VectorXd f1 = (k * fit.alpha).array() + fit.b, f2 = (k * ref.alpha).array() + ref.b;
  EXPECT_LE((f1 - f2).lpNorm<Eigen::Infinity>(), 1e-7 * (1 + f2.lpNorm<Eigen::Infinity>()));
  if (c.kind == KernelFunction::Kind::rbf) EXPECT_LE((fit.alpha - ref.alpha).norm(), 1e-6 * ref.alpha.norm());
}

TEST_P(SmoCase, WarmPathEqualsColdFits) {
  const Case c = GetParam();
  const Dataset data = test::blobs(c.n, c.d, 0.4, 0.15, /*seed=*/static_cast<std::uint64_t>(c.n + 3));
  const Eigen::MatrixXd k = kernel_of(c, data);
  const std::vector<double> lambdas = parse_lambdas("1e-3:1:9");
  SolverOptions o = tight();
  o.tol = 1e-9;
  const auto warm = fit_path_smo(k, data.y, o, lambdas, /*warm=*/true);
  const auto cold = fit_path_smo(k, data.y, o, lambdas, /*warm=*/false);
  int warm_steps = 0, cold_steps = 0;
  for (std::size_t l = 0; l < lambdas.size(); ++l) {
    ASSERT_TRUE(warm[l].converged && cold[l].converged) << "lambda " << lambdas[l];
    EXPECT_NEAR(warm[l].objective, cold[l].objective, 1e-9 * cold[l].objective) << "lambda " << lambdas[l];
    const Eigen::VectorXd fw = (k * warm[l].alpha).array() + warm[l].b, fc = (k * cold[l].alpha).array() + cold[l].b;
    EXPECT_LE((fw - fc).lpNorm<Eigen::Infinity>(), 1e-6 * (1 + fc.lpNorm<Eigen::Infinity>())) << "lambda " << lambdas[l];
    warm_steps += warm[l].iterations;
    cold_steps += cold[l].iterations;
  }
  EXPECT_LT(warm_steps, cold_steps);  // what the warm start is for
}

// Shrinking only changes which rows the steps scan: the same fits without it.
TEST_P(SmoCase, ShrinkingKeepsTheFits) {
  const Case c = GetParam();
  const Dataset data = test::blobs(c.n, c.d, 0.5, 0.1, /*seed=*/static_cast<std::uint64_t>(c.n + 11));
  const Eigen::MatrixXd k = kernel_of(c, data);
  const std::vector<double> lambdas = parse_lambdas("1e-3:1:5");
  SolverOptions o = tight();
  const auto with = fit_path_smo(k, data.y, o, lambdas);
  o.shrinking = false;
  const auto without = fit_path_smo(k, data.y, o, lambdas);
  for (std::size_t l = 0; l < lambdas.size(); ++l) {
    ASSERT_TRUE(with[l].converged && without[l].converged) << "lambda " << lambdas[l];
    EXPECT_LE(kkt_violation(k, data.y, lambdas[l], with[l].alpha, with[l].b), 1e-8) << "lambda " << lambdas[l];
    EXPECT_NEAR(with[l].objective, without[l].objective, 1e-9 * without[l].objective) << "lambda " << lambdas[l];
  }
}

INSTANTIATE_TEST_SUITE_P(Data, SmoCase, ::testing::ValuesIn(kCases), [](const auto& info) {
  return std::string(kernel_kind_name(info.param.kind)) + "_n" + std::to_string(info.param.n);
});

TEST(SmoPath, SeparableDataIsClassifiedPerfectly) {
  const Dataset train = test::blobs(/*n=*/137, /*d=*/3, 3.0, 0, /*seed=*/21);
  const Dataset test = test::blobs(/*n=*/59, /*d=*/3, 3.0, 0, /*seed=*/22);
  for (const auto kind : {KernelFunction::Kind::rbf, KernelFunction::Kind::linear}) {
    const KernelFunction kf{kind, kind == KernelFunction::Kind::rbf ? gamma_scale(train.x) : 1};
    const Eigen::MatrixXd k = gram(kf, train.x, train.x), kt = gram(kf, test.x, train.x);
    for (const Fit& f : fit_path_smo(k, train.y, tight(), parse_lambdas("1e-4:1e-1:4"))) {
      ASSERT_TRUE(f.converged);
      const Eigen::VectorXd on_train = (k * f.alpha).array() + f.b, on_test = (kt * f.alpha).array() + f.b;
      EXPECT_TRUE(((on_train.array() >= 0).cast<double>() * 2 - 1 == train.y.array()).all()) << f.lambda;
      EXPECT_TRUE(((on_test.array() >= 0).cast<double>() * 2 - 1 == test.y.array()).all()) << f.lambda;
    }
  }
}

// The library's KKT measure for the hinge sees a wrong answer: a perturbed alpha (kept feasible)
// and an infeasible one.
TEST(SmoPath, KktMeasureRejectsPerturbedAnswers) {
  const Dataset data = test::blobs(/*n=*/83, /*d=*/3, 0.5, 0.1, /*seed=*/41);
  const Eigen::MatrixXd k = gram({KernelFunction::Kind::rbf, gamma_scale(data.x)}, data.x, data.x);
  const double lambda = 1e-2;
  const Fit fit = fit_path_smo(k, data.y, tight(), {lambda}).at(0);
  ASSERT_LE(kkt_residual(k, data.y, tight(), lambda, fit.alpha, fit.b), 1e-9);
  const double c = 1 / (83 * lambda);
  // Move mass between the two free vectors of one class with the most room to their bounds:
  // y^T a stays 0 and the box holds, but the margins move off 1.
  Eigen::Index best[2] = {-1, -1};
  double room[2] = {0, 0};
  for (const double label : {-1.0, 1.0}) {
    std::vector<std::pair<double, Eigen::Index>> free;
    for (Eigen::Index i = 0; i < data.y.size(); ++i) {
      const double a = std::abs(fit.alpha[i]);
      if (data.y[i] == label && a > 0 && a < c) free.push_back({std::min(a, c - a), i});
    }
    std::sort(free.rbegin(), free.rend());
    if (free.size() >= 2 && free[1].first > room[1]) {
      best[0] = free[0].second, best[1] = free[1].second;
      room[0] = free[0].first, room[1] = free[1].first;
    }
  }
  ASSERT_GE(best[1], 0) << "no class has two free support vectors";
  Eigen::VectorXd moved = fit.alpha;
  moved[best[0]] += room[1] / 2;
  moved[best[1]] -= room[1] / 2;
  EXPECT_GT(kkt_residual(k, data.y, tight(), lambda, moved, fit.b), 1e-6);
  Eigen::VectorXd outside = fit.alpha;
  outside[best[0]] = 2 * c;
  EXPECT_TRUE(std::isinf(kkt_residual(k, data.y, tight(), lambda, outside, fit.b)));
}

}  // namespace
}  // namespace kforge::kmodel
