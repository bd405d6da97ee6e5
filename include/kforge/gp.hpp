#pragma once
// Gaussian process regression with a Matérn 5/2 kernel and one length scale per input
// dimension (ARD), for the Bayesian-optimization strategy. Targets are standardized inside;
// predictions come back on the caller's scale. Hyperparameters (length scales, signal
// variance, noise) maximize the log marginal likelihood: a grid over a shared length scale and
// the noise ratio, the signal variance profiled out in closed form, then a coordinate search
// over the per-dimension length scales. Linear algebra: Eigen's Cholesky (LLT).
#include <vector>

#include <Eigen/Dense>

namespace kforge {

struct GpHyper {
  std::vector<double> length;  // per input dimension, in the units of the inputs
  double signal = 1.0;         // variance of the standardized targets explained by the kernel
  double noise = 1e-6;         // noise variance, same units
};

class GaussianProcess {
 public:
  // X: n x d inputs (one row per point), y: n targets. With `optimize`, fits the
  // hyperparameters first (starting from the current ones for the coordinate search).
  void fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, bool optimize = true);
  void set_hyper(const GpHyper& h) { hyper_ = h; }
  [[nodiscard]] const GpHyper& hyper() const { return hyper_; }
  [[nodiscard]] double log_marginal_likelihood() const { return lml_; }
  [[nodiscard]] int points() const { return static_cast<int>(X_.rows()); }

  // Posterior mean and variance of the latent function at each row of Xs (caller's scale).
  void predict(const Eigen::MatrixXd& Xs, Eigen::VectorXd& mean, Eigen::VectorXd& var) const;

  // Matérn 5/2 correlation between two inputs under length scales `length`.
  [[nodiscard]] static double matern52(const double* a, const double* b, const std::vector<double>& length,
                                       int d);

 private:
  // Log marginal likelihood for correlation lengths `length` and noise ratio `g` with the
  // signal variance at its optimum; fills the factorization when `keep`.
  double profile(const std::vector<double>& length, double g, bool keep);

  GpHyper hyper_;
  Eigen::MatrixXd X_;
  Eigen::VectorXd ys_;            // standardized targets
  double y_mean_ = 0, y_scale_ = 1;
  Eigen::LLT<Eigen::MatrixXd> llt_;  // of K = signal * (C + g I)
  Eigen::VectorXd alpha_;         // K^-1 ys
  double lml_ = 0;
};

}  // namespace kforge
