// The spectral MM path solver: its answer at one lambda equals an independent Newton solve of the
// stationarity conditions from K itself; warm-started paths equal cold fits; the losses' slopes
// are their derivatives; both eigensolvers give the same spectrum; separable data is classified
// perfectly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kforge/kmodel.hpp"
#include "kmodel/kmodel_synthetic.hpp"
#include "kmodel/skinny_products.hpp"

namespace kforge::kmodel {
namespace {

// Newton on the stationarity system F(alpha, b) = [g + n lambda alpha; sum g] = 0, with
// g_i = y_i L'(y_i f_i), f = K alpha + b, built from K directly (no eigendecomposition): its
// Jacobian is [D K + n lambda I, D 1; 1^T D K, 1^T D 1], D = diag(L''). Backtracking on |F|.
// Semismooth for the Huberized hinge (D piecewise constant), smooth for the logistic.
struct Direct {
  Eigen::VectorXd alpha;
  double b = 0;
};
Direct newton(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o, double lambda) {
  const Eigen::Index n = y.size();
  const double nl = static_cast<double>(n) * lambda;
  auto residual = [&](const Eigen::VectorXd& a, double b, Eigen::VectorXd* d) {
    const Eigen::VectorXd f = (k * a).array() + b;
    Eigen::VectorXd r(n + 1);
    double sum_g = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
      const double t = y[i] * f[i], gi = y[i] * loss_slope(o.loss, o.delta, t);
      r[i] = gi + nl * a[i];
      sum_g += gi;
      if (d) {
        if (o.loss == Loss::logistic) {
          const double s = 1 / (1 + std::exp(-t));
          (*d)[i] = s * (1 - s);
        } else {
          (*d)[i] = (t > 1 - o.delta && t <= 1) ? 1 / o.delta : 0;
        }
      }
    }
    r[n] = sum_g;
    return r;
  };
  Direct x{Eigen::VectorXd::Zero(n), 0};
  Eigen::VectorXd d(n);
  for (int it = 0; it < 200; ++it) {
    const Eigen::VectorXd r = residual(x.alpha, x.b, &d);
    if (r.norm() < 1e-13) break;
    Eigen::MatrixXd j(n + 1, n + 1);
    j.topLeftCorner(n, n) = d.asDiagonal() * k;
    j.topLeftCorner(n, n).diagonal().array() += nl;
    j.topRightCorner(n, 1) = d;
    j.bottomLeftCorner(1, n) = d.transpose() * k;
    j(n, n) = d.sum();
    const Eigen::VectorXd step = j.fullPivLu().solve(-r);
    double t = 1;
    for (int ls = 0; ls < 40; ++ls, t /= 2) {
      const Eigen::VectorXd a2 = x.alpha + t * step.head(n);
      if (residual(a2, x.b + t * step[n], nullptr).norm() < r.norm()) break;
    }
    x.alpha += t * step.head(n);
    x.b += t * step[n];
  }
  return x;
}

class SolverVsNewton : public ::testing::TestWithParam<Loss> {};

TEST_P(SolverVsNewton, SameMinimizerAtOneLambda) {
  const Dataset data = test::blobs(/*n=*/97, /*d=*/3, 0.6, 0.1, /*seed=*/11);
  const Eigen::MatrixXd k = gram({KernelFunction::Kind::rbf, 0.3}, data.x, data.x);
  SolverOptions o;
  o.loss = GetParam();
  o.tol = 1e-10;
  o.max_iter = 200000;
  const double lambda = 3e-3;
  const Fit mm = fit_path(decompose(k), data.y, o, {lambda}).at(0);
  ASSERT_TRUE(mm.converged) << "kkt " << mm.kkt << " after " << mm.iterations;
  EXPECT_LE(kkt_residual(k, data.y, o, lambda, mm.alpha, mm.b), 1e-8);  // from K, not the spectrum
  const Direct nt = newton(k, data.y, o, lambda);
  ASSERT_LE(kkt_residual(k, data.y, o, lambda, nt.alpha, nt.b), 1e-9) << "the reference did not converge";
  const double f_mm = objective(k, data.y, o, lambda, mm.alpha, mm.b);
  const double f_nt = objective(k, data.y, o, lambda, nt.alpha, nt.b);
  EXPECT_NEAR(f_mm, f_nt, 1e-9 * f_nt);
  EXPECT_NEAR(mm.objective, f_mm, 1e-9 * f_mm);  // the solver's own objective is the true one
  EXPECT_LE((mm.alpha - nt.alpha).norm(), 1e-6 * nt.alpha.norm());
  EXPECT_NEAR(mm.b, nt.b, 1e-6 * (1 + std::abs(nt.b)));
  // Predictions agree: the fitted values on the training rows.
  const Eigen::VectorXd f1 = (k * mm.alpha).array() + mm.b, f2 = (k * nt.alpha).array() + nt.b;
  EXPECT_LE((f1 - f2).lpNorm<Eigen::Infinity>(), 1e-6);
}

// Low-dimensional data under a smooth kernel: most eigenvalues are negligible, the solver iterates
// on a few eigenpairs, and alpha's other directions (set from the representer form) still give
// the full problem's minimizer and its predictions at new points.
TEST_P(SolverVsNewton, TruncatedSpectrumKeepsTheMinimizer) {
  const Dataset data = test::blobs(/*n=*/143, /*d=*/2, 0.5, 0.1, /*seed=*/31);
  const Dataset fresh = test::blobs(/*n=*/29, /*d=*/2, 0.5, 0.1, /*seed=*/32);
  const KernelFunction kf{KernelFunction::Kind::rbf, 0.1};
  const Eigen::MatrixXd k = gram(kf, data.x, data.x);
  SolverOptions o;
  o.loss = GetParam();
  o.tol = 1e-10;
  o.max_iter = 200000;
  o.rank_tol = 1e-9;
  const double lambda = 1e-2;
  const Fit mm = fit_path(decompose(k), data.y, o, {lambda}).at(0);
  ASSERT_TRUE(mm.converged);
  EXPECT_LT(mm.rank, 143 / 2);
  const Direct nt = newton(k, data.y, o, lambda);
  const double f_nt = objective(k, data.y, o, lambda, nt.alpha, nt.b);
  EXPECT_NEAR(objective(k, data.y, o, lambda, mm.alpha, mm.b), f_nt, 1e-7 * f_nt);
  EXPECT_LE((mm.alpha - nt.alpha).norm(), 1e-4 * nt.alpha.norm());
  const Eigen::MatrixXd kn = gram(kf, fresh.x, data.x);
  const Eigen::VectorXd p1 = (kn * mm.alpha).array() + mm.b, p2 = (kn * nt.alpha).array() + nt.b;
  EXPECT_LE((p1 - p2).lpNorm<Eigen::Infinity>(), 1e-5);
}

TEST_P(SolverVsNewton, WarmPathEqualsColdFits) {
  const Dataset data = test::blobs(/*n=*/121, /*d=*/4, 0.4, 0.15, /*seed=*/5);
  const Eigen::MatrixXd k = gram({KernelFunction::Kind::rbf, 0.2}, data.x, data.x);
  const Spectrum sp = decompose(k);
  SolverOptions o;
  o.loss = GetParam();
  o.tol = 1e-9;
  o.max_iter = 200000;
  const std::vector<double> lambdas = parse_lambdas("1e-3:1:7");
  const auto warm = fit_path(sp, data.y, o, lambdas, /*warm=*/true);
  const auto cold = fit_path(sp, data.y, o, lambdas, /*warm=*/false);
  for (std::size_t l = 0; l < lambdas.size(); ++l) {
    ASSERT_TRUE(warm[l].converged && cold[l].converged) << "lambda " << lambdas[l];
    EXPECT_NEAR(warm[l].objective, cold[l].objective, 1e-8 * cold[l].objective) << "lambda " << lambdas[l];
    EXPECT_LE((warm[l].alpha - cold[l].alpha).norm(), 1e-5 * cold[l].alpha.norm()) << "lambda " << lambdas[l];
    EXPECT_NEAR(warm[l].b, cold[l].b, 1e-5 * (1 + std::abs(cold[l].b)));
  }
}

// Cross-validation's route: one spectrum of the kernel matrix over ALL rows, the loss summed over
// a training fold only. The answer must be the fold's own minimizer, checked from the fold's block
// K[train, train] cut here (KKT residual, and Newton on that block), and the same as fit_path on
// the block's own spectrum; the held-out rows' labels are poisoned (NaN) to show they are unread.
TEST_P(SolverVsNewton, FoldFromTheWholeSpectrumIsTheFoldsMinimizer) {
  // Full rank (3 dimensions: automatic falls back to LAPACK), then numerically low rank (2
  // dimensions, a wide kernel: automatic takes the pivoted-Cholesky route, r < n/4).
  struct Case { int n, d; double gamma, close; std::uint64_t seed; };
  for (const Case c : {Case{113, 3, 0.25, 1e-6, 41}, Case{157, 2, 0.02, 1e-4, 43}}) {
    const Dataset data = test::blobs(c.n, c.d, 0.5, 0.1, c.seed);
    const Eigen::MatrixXd k = gram({KernelFunction::Kind::rbf, c.gamma}, data.x, data.x);
    std::vector<Eigen::Index> train;
    for (Eigen::Index i = 0; i < data.y.size(); ++i)
      if (i % 5 != 2 && i % 7 != 3) train.push_back(i);
    const Eigen::Index nt = static_cast<Eigen::Index>(train.size());
    Eigen::MatrixXd k_train(nt, nt);
    Eigen::VectorXd y_train(nt), y_poisoned = Eigen::VectorXd::Constant(data.y.size(), std::nan(""));
    for (Eigen::Index i = 0; i < nt; ++i) {
      y_train[i] = y_poisoned[train[i]] = data.y[train[i]];
      for (Eigen::Index j = 0; j < nt; ++j) k_train(i, j) = k(train[i], train[j]);
    }
    SolverOptions o;
    o.loss = GetParam();
    o.tol = 1e-10;
    o.max_iter = 200000;
    const std::vector<double> lambdas = parse_lambdas("2e-3:0.5:5");
    for (const EigenSolver how : {EigenSolver::lapack, EigenSolver::automatic}) {
      const Spectrum sp = decompose(k, how, o.rank_tol);
      if (c.d == 2 && how == EigenSolver::automatic) EXPECT_LT(sp.s.size(), c.n / 4) << "not the low-rank route";
      const auto rows = fit_path_rows(sp, y_poisoned, train, o, lambdas);
      const auto own = fit_path(decompose(k_train), y_train, o, lambdas);
      for (std::size_t l = 0; l < lambdas.size(); ++l) {
        const Fit& f = rows[l];
        ASSERT_TRUE(f.converged) << "lambda " << lambdas[l] << " kkt " << f.kkt;
        ASSERT_EQ(f.alpha.size(), nt);
        EXPECT_LE(kkt_residual(k_train, y_train, o, lambdas[l], f.alpha, f.b), 1e-8) << "lambda " << lambdas[l];
        EXPECT_NEAR(f.objective, objective(k_train, y_train, o, lambdas[l], f.alpha, f.b), 1e-9 * f.objective);
        EXPECT_LE((f.alpha - own[l].alpha).norm(), c.close * own[l].alpha.norm()) << "lambda " << lambdas[l];
        EXPECT_NEAR(f.b, own[l].b, c.close * (1 + std::abs(own[l].b)));
      }
      // In lockstep with two other row sets: each path as when fitted alone.
      std::vector<Eigen::Index> odd, head;
      for (Eigen::Index i = 0; i < data.y.size(); ++i) (i % 2 ? odd : head).push_back(i);
      head.resize(head.size() / 2 + 3);
      const auto together = fit_path_folds(sp, data.y, {odd, train, head}, o, lambdas);
      ASSERT_EQ(together.size(), 3u);
      for (std::size_t l = 0; l < lambdas.size(); ++l) {
        EXPECT_LE((together[1][l].alpha - rows[l].alpha).norm(), 1e-8 * rows[l].alpha.norm());
        EXPECT_NEAR(together[1][l].b, rows[l].b, 1e-8 * (1 + std::abs(rows[l].b)));
      }
      const auto alone = fit_path_rows(sp, data.y, head, o, lambdas);
      for (std::size_t l = 0; l < lambdas.size(); ++l)
        EXPECT_LE((together[2][l].alpha - alone[l].alpha).norm(), 1e-8 * alone[l].alpha.norm());
      const double lambda = lambdas[3];
      const Direct nt_fit = newton(k_train, y_train, o, lambda);
      ASSERT_LE(kkt_residual(k_train, y_train, o, lambda, nt_fit.alpha, nt_fit.b), 1e-9);
      EXPECT_LE((rows[3].alpha - nt_fit.alpha).norm(), c.close * nt_fit.alpha.norm());
      EXPECT_NEAR(rows[3].b, nt_fit.b, c.close * (1 + std::abs(nt_fit.b)));
      const Eigen::VectorXd f1 = (k_train * rows[3].alpha).array() + rows[3].b;
      const Eigen::VectorXd f2 = (k_train * nt_fit.alpha).array() + nt_fit.b;
      EXPECT_LE((f1 - f2).lpNorm<Eigen::Infinity>(), 1e-6);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Losses, SolverVsNewton, ::testing::Values(Loss::huber_hinge, Loss::logistic),
                         [](const auto& info) { return std::string(info.param == Loss::logistic ? "logistic" : "huberized_hinge"); });

TEST(KernelModelLoss, SlopeIsTheDerivativeAndCurvatureIsBounded) {
  for (const Loss l : {Loss::huber_hinge, Loss::logistic}) {
    const double delta = 0.37, c = curvature_bound(l, delta), h = 1e-6;
    for (double t = -3.1; t < 3; t += 0.0731) {
      const double fd = (loss_value(l, delta, t + h) - loss_value(l, delta, t - h)) / (2 * h);
      EXPECT_NEAR(loss_slope(l, delta, t), fd, 1e-6) << loss_name(l) << " t " << t;
      const double curv = (loss_slope(l, delta, t + h) - loss_slope(l, delta, t - h)) / (2 * h);
      EXPECT_LE(curv, c * (1 + 1e-6) + 1e-6) << loss_name(l) << " t " << t;
    }
  }
  EXPECT_NEAR(loss_value(Loss::logistic, 0, -800), 800, 1e-9);  // no overflow
}

TEST(KernelMatrix, EigenSolversAgreeAndReconstruct) {
  const Dataset data = test::blobs(/*n=*/73, /*d=*/5, 0.5, 0, /*seed=*/3);
  for (const auto kind : {KernelFunction::Kind::rbf, KernelFunction::Kind::linear, KernelFunction::Kind::poly}) {
    const Eigen::MatrixXd k = gram({kind, 0.1, 3, 1.0}, data.x, data.x);
    const Spectrum a = decompose(k, EigenSolver::lapack), b = decompose(k, EigenSolver::eigen);
    EXPECT_LE((a.s - b.s).lpNorm<Eigen::Infinity>(), 1e-9 * a.s.maxCoeff());
    const Eigen::MatrixXd ka = a.u * a.s.asDiagonal() * a.u.transpose();
    EXPECT_LE((ka - k).norm(), 1e-10 * k.norm());
    // The top eigenpairs alone: the same largest eigenvalues, the rest of K below the threshold.
    const Spectrum top = decompose(k, EigenSolver::lapack, 1e-6);
    ASSERT_GT(top.s.size(), 0);
    ASSERT_LE(top.s.size(), a.s.size());
    EXPECT_LE((top.s - a.s.tail(top.s.size())).lpNorm<Eigen::Infinity>(), 1e-9 * a.s.maxCoeff());
    if (top.s.size() < a.s.size()) EXPECT_LE(a.s[a.s.size() - top.s.size() - 1], 1e-6 * a.s.maxCoeff() * (1 + 1e-9));
    EXPECT_LE((top.u.transpose() * top.u - Eigen::MatrixXd::Identity(top.s.size(), top.s.size())).norm(), 1e-10);
  }
  // The Gram matrix itself against the definition, off the diagonal and at odd shapes.
  const Eigen::MatrixXd g = gram({KernelFunction::Kind::rbf, 0.7}, data.x.topRows(9), data.x.bottomRows(13));
  ASSERT_EQ(g.rows(), 9);
  ASSERT_EQ(g.cols(), 13);
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 13; ++j)
      EXPECT_NEAR(g(i, j), std::exp(-0.7 * (data.x.row(i) - data.x.row(60 + j)).squaredNorm()), 1e-12);
  const Eigen::MatrixXd p = gram({KernelFunction::Kind::poly, 0.3, 4, -0.5}, data.x.topRows(9), data.x.bottomRows(13));
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 13; ++j) {
      const double want = std::pow(0.3 * data.x.row(i).dot(data.x.row(60 + j)) - 0.5, 4);
      EXPECT_NEAR(p(i, j), want, 1e-12 * (1 + std::abs(want)));
    }
}

// The pivoted-Cholesky route: on low-dimensional data it stops at a small rank, its U is
// orthonormal, U diag(s) U^T is K within the trace bound, and its top eigenvalues are LAPACK's; on
// a full-rank matrix it gives up at max_rank and `automatic` gives LAPACK's answer.
TEST(KernelMatrix, LowRankRouteMatchesLapack) {
  const Dataset low = test::blobs(/*n=*/157, /*d=*/2, 0.5, 0.1, /*seed=*/17);
  const Eigen::MatrixXd k = gram({KernelFunction::Kind::rbf, 0.05}, low.x, low.x);
  const double rank_tol = 1e-10;
  Spectrum lr;
  ASSERT_TRUE(low_rank_eigenpairs(k, rank_tol, k.rows() / 2, lr));
  const Spectrum full = decompose(k, EigenSolver::lapack);
  const double s_max = full.s.maxCoeff();
  const Eigen::Index r = lr.s.size();
  EXPECT_GT(r, 3);
  EXPECT_LE(r, k.rows() / 3);
  EXPECT_LE((lr.u.transpose() * lr.u - Eigen::MatrixXd::Identity(r, r)).norm(), 1e-12 * r);
  // |E|_F <= trace(E) <= rank_tol s_max (E is positive semidefinite), plus rounding.
  EXPECT_LE((lr.u * lr.s.asDiagonal() * lr.u.transpose() - k).norm(), rank_tol * s_max + 1e-12 * k.norm());
  // Eigenvalues of K - E interlace: each of the top ones within |E| of LAPACK's.
  for (Eigen::Index i = 0; i < r; ++i)
    if (lr.s[r - 1 - i] > 1e-6 * s_max)
      EXPECT_NEAR(lr.s[r - 1 - i], full.s[full.s.size() - 1 - i], 2 * rank_tol * s_max + 1e-12 * s_max) << "pair " << i;
  // Full rank (a narrow kernel on 9 dimensions): no low-rank factor; automatic is lapack.
  const Dataset wide = test::blobs(/*n=*/61, /*d=*/9, 0.5, 0.1, /*seed=*/18);
  const Eigen::MatrixXd kw = gram({KernelFunction::Kind::rbf, 2.0}, wide.x, wide.x);
  Spectrum none;
  EXPECT_FALSE(low_rank_eigenpairs(kw, 1e-12, kw.rows() / 4, none));
  const Spectrum a = decompose(kw, EigenSolver::automatic, 1e-12), b = decompose(kw, EigenSolver::lapack, 1e-12);
  ASSERT_EQ(a.s.size(), b.s.size());
  EXPECT_LE((a.s - b.s).lpNorm<Eigen::Infinity>(), 1e-12 * b.s.maxCoeff());
}

// At the default tolerance the steps' products run in float; each fit's end point is judged in
// double. The residual recomputed here from K (in double, no spectrum) must meet the stop, and the
// objective must match the all-double path's (both within the stop of the minimum).
TEST(KernelModelPath, SinglePrecisionStepsMeetTheStopInDouble) {
  const Dataset data = test::blobs(/*n=*/139, /*d=*/6, 0.4, 0.1, /*seed=*/23);
  const Eigen::MatrixXd k = gram({KernelFunction::Kind::rbf, gamma_scale(data.x)}, data.x, data.x);
  const Spectrum sp = decompose(k, EigenSolver::automatic, 1e-12);
  const std::vector<double> lambdas = parse_lambdas("1e-4:1:9");
  for (const Loss l : {Loss::logistic, Loss::huber_hinge}) {
    SolverOptions o;
    o.loss = l;  // tol 0: the default 1e-4, so float steps
    const auto single = fit_path(sp, data.y, o, lambdas);
    o.single_precision_steps = false;
    const auto twice = fit_path(sp, data.y, o, lambdas);
    for (std::size_t i = 0; i < lambdas.size(); ++i) {
      ASSERT_TRUE(single[i].converged && twice[i].converged) << loss_name(l) << " lambda " << lambdas[i];
      EXPECT_LE(kkt_residual(k, data.y, o, lambdas[i], single[i].alpha, single[i].b), 1e-4 * (1 + 1e-6))
          << loss_name(l) << " lambda " << lambdas[i];
      const double j1 = objective(k, data.y, o, lambdas[i], single[i].alpha, single[i].b);
      const double j2 = objective(k, data.y, o, lambdas[i], twice[i].alpha, twice[i].b);
      EXPECT_NEAR(j1, j2, 1e-5 * j2) << loss_name(l) << " lambda " << lambdas[i];
      EXPECT_NEAR(single[i].objective, j1, 1e-9 * j1);
    }
  }
}

// The path's streamed products, float and double: every (len, cols, m) with tails past the 8 lanes and m past
// one chunk of 8 right-hand sides, padded leading dimensions, random values; against a sum
// of the same values in long double, to the type's accuracy; the output's padding stays untouched.
template <typename T>
void check_column_dots(T tol) {
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<T> unit(-1, 1);
  for (const std::ptrdiff_t len : {1, 3, 7, 8, 13, 203}) {
    for (const std::ptrdiff_t cols : {1, 5, 37}) {
      for (const std::ptrdiff_t m : {1, 3, 5, 8, 11}) {
        const std::ptrdiff_t lda = len + 3, ldx = len + 1, ldo = cols + 2;
        std::vector<T> a(static_cast<std::size_t>(lda * cols)), x(static_cast<std::size_t>(ldx * m));
        for (T& v : a) v = unit(rng);
        for (T& v : x) v = unit(rng);
        std::vector<T> out(static_cast<std::size_t>(ldo * m), std::numeric_limits<T>::quiet_NaN());
        skinny::column_dots(a.data(), len, cols, lda, x.data(), ldx, m, out.data(), ldo);
        for (std::ptrdiff_t j = 0; j < m; ++j)
          for (std::ptrdiff_t c = 0; c < ldo; ++c) {
            const T got = out[static_cast<std::size_t>(j * ldo + c)];
            if (c >= cols) {
              EXPECT_TRUE(std::isnan(got)) << "padding written at " << c;
              continue;
            }
            long double want = 0, mag = 0;
            for (std::ptrdiff_t i = 0; i < len; ++i) {
              const long double p = static_cast<long double>(a[static_cast<std::size_t>(c * lda + i)]) *
                                    static_cast<long double>(x[static_cast<std::size_t>(j * ldx + i)]);
              want += p;
              mag += p < 0 ? -p : p;
            }
            EXPECT_NEAR(static_cast<double>(got), static_cast<double>(want), static_cast<double>(tol * (1 + mag)))
                << "len " << len << " cols " << cols << " m " << m;
          }
      }
    }
  }
}

TEST(KernelModelPath, StreamedColumnDotsMatchALongDoubleSum) {
  check_column_dots<float>(1e-6F);
  check_column_dots<double>(1e-14);
}

// The path with the streamed products equals the path with OpenBLAS's sgemm (both float steps):
// the same stop met, objectives equal to the stop's accuracy. 10-dimensional data: full rank.
TEST(KernelModelPath, StreamedStepsMatchSgemmSteps) {
  const Dataset data = test::blobs(/*n=*/143, /*d=*/10, 0.3, 0.1, /*seed=*/37);
  const Eigen::MatrixXd k = gram({KernelFunction::Kind::rbf, gamma_scale(data.x)}, data.x, data.x);
  const Spectrum sp = decompose(k, EigenSolver::automatic, 1e-12);
  std::vector<std::vector<Eigen::Index>> folds(3);
  for (Eigen::Index i = 0; i < k.rows(); ++i) folds[static_cast<std::size_t>(i % 3)].push_back(i);
  const std::vector<double> lambdas = parse_lambdas("1e-4:1:6");
  SolverOptions o;
  o.loss = Loss::logistic;  // the default tol: float steps
  const auto streamed = fit_path_folds(sp, data.y, folds, o, lambdas);
  o.streamed_products = false;
  const auto blas = fit_path_folds(sp, data.y, folds, o, lambdas);
  for (std::size_t j = 0; j < folds.size(); ++j)
    for (std::size_t i = 0; i < lambdas.size(); ++i) {
      ASSERT_TRUE(streamed[j][i].converged && blas[j][i].converged);
      EXPECT_LE(streamed[j][i].kkt, 1e-4);
      EXPECT_NEAR(streamed[j][i].objective, blas[j][i].objective, 1e-5 * blas[j][i].objective)
          << "fold " << j << " lambda " << lambdas[i];
    }
}

// skinny::force_portable for one scope (tests of the OpenBLAS route on an AVX2 machine).
struct PortableProducts {
  explicit PortableProducts(bool on) { skinny::force_portable(on); }
  ~PortableProducts() { skinny::force_portable(false); }
};

// The one-pass step's kernel (float steps; double judgement): f = U b row block by row block, the callback's g from f, acc = U^T g;
// against long double sums, at r past the 8- and 16-lane chunks, n past several row blocks (not
// a multiple of the block), mb 0..9 and mg 1..11 (past one chunk of 8), padded leading
// dimensions; the callback sees contiguous blocks covering every row once, in order.
// A sum of len products in T: |error| <= len * eps/2 * sum |p| (the textbook bound), plus one unit
// for the inputs' own rounding.
template <typename T>
double sum_bound(std::ptrdiff_t len, long double mag) {
  return static_cast<double>(len + 2) * static_cast<double>(std::numeric_limits<T>::epsilon()) / 2 *
         static_cast<double>(1 + mag);
}

template <typename T>
void check_fused_row_pass() {
  std::mt19937_64 rng(43);
  std::uniform_real_distribution<T> unit(-1, 1);
  struct Shape {
    std::ptrdiff_t r, mb, mg;
  };
  for (const Shape sh : {Shape{1, 1, 1}, Shape{13, 3, 5}, Shape{203, 5, 5}, Shape{203, 0, 3}, Shape{1037, 9, 11}}) {
    const std::ptrdiff_t r = sh.r, mb = sh.mb, mg = sh.mg;
    const std::ptrdiff_t n = 3 * skinny::fused_block_rows(r, sizeof(T)) + 7;
    const std::ptrdiff_t ldu = r + 3, ldb = r + 1, ldf = n + 2, ldg = n + 5, ldacc = r + 4;
    std::vector<T> ut(static_cast<std::size_t>(ldu * n)), b(static_cast<std::size_t>(ldb * std::max<std::ptrdiff_t>(mb, 1)));
    for (T& v : ut) v = unit(rng);
    for (T& v : b) v = unit(rng);
    std::vector<T> extra(static_cast<std::size_t>(n * mg));  // g's columns past mb: not from f
    for (T& v : extra) v = unit(rng);
    const T nan = std::numeric_limits<T>::quiet_NaN();
    std::vector<T> f(static_cast<std::size_t>(ldf * std::max<std::ptrdiff_t>(mb, 1)), nan),
        g(static_cast<std::size_t>(ldg * mg), nan), acc(static_cast<std::size_t>(ldacc * mg), nan);
    std::ptrdiff_t next_row = 0;
    auto slopes = [&](std::ptrdiff_t i0, std::ptrdiff_t i1) {
      ASSERT_EQ(i0, next_row);
      ASSERT_GT(i1, i0);
      next_row = i1;
      for (std::ptrdiff_t j = 0; j < mg; ++j)
        for (std::ptrdiff_t i = i0; i < i1; ++i)
          g[static_cast<std::size_t>(j * ldg + i)] =
              j < mb ? std::tanh(f[static_cast<std::size_t>(j * ldf + i)]) : extra[static_cast<std::size_t>(j * n + i)];
    };
    skinny::fused_row_pass(ut.data(), r, n, ldu, b.data(), ldb, mb, f.data(), ldf, g.data(), ldg, mg, acc.data(),
                           ldacc, slopes);
    EXPECT_EQ(next_row, n) << "r " << r;
    auto u = [&](std::ptrdiff_t i, std::ptrdiff_t k) { return static_cast<long double>(ut[static_cast<std::size_t>(i * ldu + k)]); };
    for (std::ptrdiff_t j = 0; j < mb; ++j)
      for (std::ptrdiff_t i = 0; i < ldf; ++i) {
        const T got = f[static_cast<std::size_t>(j * ldf + i)];
        if (i >= n) {
          EXPECT_TRUE(std::isnan(got)) << "f's padding written at " << i;
          continue;
        }
        long double want = 0, mag = 0;
        for (std::ptrdiff_t k = 0; k < r; ++k) {
          const long double p = u(i, k) * b[static_cast<std::size_t>(j * ldb + k)];
          want += p;
          mag += std::fabs(p);
        }
        ASSERT_NEAR(got, static_cast<double>(want), sum_bound<T>(r, mag)) << "f r " << r << " row " << i;
      }
    for (std::ptrdiff_t j = 0; j < mg; ++j)
      for (std::ptrdiff_t k = 0; k < ldacc; ++k) {
        const T got = acc[static_cast<std::size_t>(j * ldacc + k)];
        if (k >= r) {
          EXPECT_TRUE(std::isnan(got)) << "acc's padding written at " << k;
          continue;
        }
        long double want = 0, mag = 0;
        for (std::ptrdiff_t i = 0; i < n; ++i) {
          const long double p = u(i, k) * g[static_cast<std::size_t>(j * ldg + i)];
          want += p;
          mag += std::fabs(p);
        }
        ASSERT_NEAR(got, static_cast<double>(want), sum_bound<T>(n, mag))
            << "acc r " << r << " column " << j << " k " << k;
      }
  }
}

TEST(KernelModelPath, FusedRowPassMatchesALongDoubleSum) {
  check_fused_row_pass<float>();
  check_fused_row_pass<double>();
  const PortableProducts portable(true);  // the OpenBLAS route, as without AVX2 + FMA
  check_fused_row_pass<float>();
  check_fused_row_pass<double>();
}

// The one-pass steps take the two-pass steps' path: at n = 611 (not a multiple of 8 nor of the
// row block, 80 rows at r = 611, so several blocks and a tail), 10-dimensional data (full rank),
// 1..7 folds in lockstep, with and without AVX2: every fit converged, the same iteration counts
// (within 1: the products' float sums are ordered differently), objectives to 1e-6 relative.
TEST(KernelModelPath, OnePassStepsTakeTheTwoPassPath) {
  const Dataset data = test::blobs(/*n=*/611, /*d=*/10, 0.3, 0.1, /*seed=*/53);
  const Eigen::MatrixXd k = gram({KernelFunction::Kind::rbf, gamma_scale(data.x)}, data.x, data.x);
  const Spectrum sp = decompose(k, EigenSolver::automatic, 1e-12);
  ASSERT_GT(k.rows() % skinny::fused_block_rows(sp.s.size()), 0);
  ASSERT_GT(k.rows() % skinny::fused_block_rows(sp.s.size(), sizeof(double)), 0);
  ASSERT_EQ(sp.s.size(), k.rows()) << "full rank: the judgement's alpha = U beta is exercised";
  const std::vector<double> lambdas = parse_lambdas("1e-3:1:4");
  for (const bool portable : {false, true}) {
    const PortableProducts route(portable);
    for (std::size_t nf = 1; nf <= 7; ++nf) {
      std::vector<std::vector<Eigen::Index>> folds(nf);  // fold j trains on the rows i % nf != j
      for (Eigen::Index i = 0; i < k.rows(); ++i)
        for (std::size_t j = 0; j < nf; ++j)
          if (nf == 1 || static_cast<std::size_t>(i) % nf != j) folds[j].push_back(i);
      SolverOptions o;
      o.loss = Loss::logistic;  // the default tol: float steps
      o.one_pass_min_bytes = 0;  // U (1.4 MiB in float) is below the default's size
      const auto one = fit_path_folds(sp, data.y, folds, o, lambdas);
      o.one_pass_steps = false;
      const auto two = fit_path_folds(sp, data.y, folds, o, lambdas);
      for (std::size_t j = 0; j < nf; ++j)
        for (std::size_t i = 0; i < lambdas.size(); ++i) {
          const std::string at = "portable " + std::to_string(portable) + " folds " + std::to_string(nf) + " fold " +
                                 std::to_string(j) + " lambda " + std::to_string(lambdas[i]);
          ASSERT_TRUE(one[j][i].converged && two[j][i].converged) << at;
          EXPECT_LE(one[j][i].kkt, 1e-4) << at;
          EXPECT_LE(std::abs(one[j][i].iterations - two[j][i].iterations), 1) << at;
          EXPECT_NEAR(one[j][i].objective, two[j][i].objective, 1e-6 * two[j][i].objective) << at;
          // alpha (at full rank the one-pass judgement reads it off as U beta): the same fit's,
          // and with one fold (every row) its residual recomputed from K meets the stop.
          const double a_max = two[j][i].alpha.lpNorm<Eigen::Infinity>();
          EXPECT_LE((one[j][i].alpha - two[j][i].alpha).lpNorm<Eigen::Infinity>(), 1e-3 * a_max) << at;
          EXPECT_NEAR(one[j][i].b, two[j][i].b, 1e-3 * (1 + std::abs(two[j][i].b))) << at;
          if (nf == 1)
            EXPECT_LE(kkt_residual(k, data.y, o, lambdas[i], one[j][i].alpha, one[j][i].b), 1e-4 * (1 + 1e-6)) << at;
        }
    }
  }
}

TEST(KernelModelPath, SeparableDataIsClassifiedPerfectly) {
  for (const Loss l : {Loss::huber_hinge, Loss::logistic}) {
    const Dataset train = test::blobs(/*n=*/131, /*d=*/3, 3.0, 0, /*seed=*/21);
    const Dataset test = test::blobs(/*n=*/57, /*d=*/3, 3.0, 0, /*seed=*/22);
    const KernelFunction kf{KernelFunction::Kind::rbf, gamma_scale(train.x)};
    SolverOptions o;
    o.loss = l;
    const auto fits = fit_path(decompose(gram(kf, train.x, train.x)), train.y, o, parse_lambdas("1e-4:1e-1:4"));
    for (const Fit& f : fits) {
      const Eigen::VectorXd ft = (gram(kf, test.x, train.x) * f.alpha).array() + f.b;
      EXPECT_TRUE(((ft.array() >= 0).cast<double>() * 2 - 1 == test.y.array()).all())
          << loss_name(l) << " lambda " << f.lambda;
    }
  }
}

}  // namespace
}  // namespace kforge::kmodel
