// The Gaussian process on known data: interpolation of noise-free points, no variance where it
// has seen the function, the prior far away, and hyperparameters that raise the likelihood.
#include <gtest/gtest.h>

#include <cmath>

#include "kforge/gp.hpp"

namespace kforge {
namespace {

Eigen::MatrixXd grid_1d(int n) {
  Eigen::MatrixXd X(n, 1);
  for (int i = 0; i < n; ++i) X(i, 0) = static_cast<double>(i) / (n - 1);
  return X;
}

TEST(Gp, Matern52IsOneAtZeroAndDecays) {
  const double a[2] = {0.1, 0.2}, b[2] = {0.1, 0.2}, c[2] = {0.6, 0.2}, far[2] = {9, 9};
  const std::vector<double> len{0.3, 0.3};
  EXPECT_DOUBLE_EQ(GaussianProcess::matern52(a, b, len, 2), 1.0);
  // r = 0.5/0.3: (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)
  const double r = 0.5 / 0.3, s = std::sqrt(5.0) * r;
  EXPECT_NEAR(GaussianProcess::matern52(a, c, len, 2), (1 + s + 5.0 / 3.0 * r * r) * std::exp(-s), 1e-12);
  EXPECT_LT(GaussianProcess::matern52(a, far, len, 2), 1e-10);
}

TEST(Gp, InterpolatesNoiseFreePointsWithNoVarianceThere) {
  const Eigen::MatrixXd X = grid_1d(7);
  Eigen::VectorXd y(7);
  for (int i = 0; i < 7; ++i) y(i) = std::sin(6 * X(i, 0)) + 2;
  GaussianProcess gp;
  gp.set_hyper({{0.3}, 1.0, 1e-10});
  gp.fit(X, y, false);
  Eigen::VectorXd mu, var;
  gp.predict(X, mu, var);
  for (int i = 0; i < 7; ++i) {
    EXPECT_NEAR(mu(i), y(i), 1e-5);
    EXPECT_NEAR(var(i), 0.0, 1e-6);
  }
  // Between the points the variance is positive and the mean still close to the function.
  Eigen::MatrixXd mid(1, 1);
  mid(0, 0) = 0.5 / 6;
  gp.predict(mid, mu, var);
  EXPECT_GT(var(0), 1e-6);
  EXPECT_NEAR(mu(0), std::sin(6 * mid(0, 0)) + 2, 0.05);
}

TEST(Gp, RevertsToTheMeanFarAway) {
  const Eigen::MatrixXd X = grid_1d(5);
  Eigen::VectorXd y(5);
  y << 3, 1, 4, 1, 5;
  GaussianProcess gp;
  gp.set_hyper({{0.2}, 1.0, 1e-6});
  gp.fit(X, y, false);
  Eigen::MatrixXd far(1, 1);
  far(0, 0) = 50;
  Eigen::VectorXd mu, var;
  gp.predict(far, mu, var);
  EXPECT_NEAR(mu(0), y.mean(), 1e-9);
  const double y_var = (y.array() - y.mean()).square().sum() / 4;
  EXPECT_NEAR(var(0), 1.0 * y_var, 1e-9) << "the prior variance on the caller's scale";
}

TEST(Gp, FittedHyperparametersBeatAPoorGuessAndFindTheIrrelevantInput) {
  // y depends on the first input only; the second is noise-free clutter.
  const int n = 30;
  Eigen::MatrixXd X(n, 2);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    X(i, 0) = std::fmod(i * 0.37, 1.0);
    X(i, 1) = std::fmod(i * 0.61, 1.0);
    y(i) = std::sin(5 * X(i, 0));
  }
  GaussianProcess poor;
  poor.set_hyper({{0.01, 0.01}, 1.0, 0.5});
  poor.fit(X, y, false);
  GaussianProcess fitted;
  fitted.fit(X, y, true);
  EXPECT_GT(fitted.log_marginal_likelihood(), poor.log_marginal_likelihood());
  EXPECT_GT(fitted.hyper().length[1], 3 * fitted.hyper().length[0])
      << "the irrelevant input should get the longer length scale";
  // And it predicts unseen points well.
  Eigen::MatrixXd t(3, 2);
  t << 0.15, 0.5, 0.55, 0.1, 0.85, 0.9;
  Eigen::VectorXd mu, var;
  fitted.predict(t, mu, var);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(mu(i), std::sin(5 * t(i, 0)), 0.05) << i;
}

}  // namespace
}  // namespace kforge
