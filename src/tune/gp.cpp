#include "kforge/gp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kforge {

namespace {
constexpr double kLog2Pi = 1.8378770664093453;
constexpr double kMinLength = 0.01, kMaxLength = 100.0;

Eigen::MatrixXd correlation(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B,
                            const std::vector<double>& length) {
  const int d = static_cast<int>(A.cols());
  // Row-major copies scaled by the length scales make each pair a plain distance.
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> a(A.rows(), d), b(B.rows(), d);
  for (int k = 0; k < d; ++k) {
    a.col(k) = A.col(k) / length[k];
    b.col(k) = B.col(k) / length[k];
  }
  const std::vector<double> unit(d, 1.0);
  Eigen::MatrixXd C(A.rows(), B.rows());
  for (Eigen::Index j = 0; j < B.rows(); ++j)
    for (Eigen::Index i = 0; i < A.rows(); ++i)
      C(i, j) = GaussianProcess::matern52(a.row(i).data(), b.row(j).data(), unit, d);
  return C;
}
}  // namespace

double GaussianProcess::matern52(const double* a, const double* b, const std::vector<double>& length,
                                 int d) {
  double r2 = 0;
  for (int k = 0; k < d; ++k) {
    const double t = (a[k] - b[k]) / length[k];
    r2 += t * t;
  }
  const double s = std::sqrt(5.0 * r2);
  return (1.0 + s + 5.0 / 3.0 * r2) * std::exp(-s);
}

double GaussianProcess::profile(const std::vector<double>& length, double g, bool keep) {
  const Eigen::Index n = X_.rows();
  Eigen::MatrixXd C = correlation(X_, X_, length);
  C.diagonal().array() += g + 1e-10;
  Eigen::LLT<Eigen::MatrixXd> llt(C);
  if (llt.info() != Eigen::Success) return -std::numeric_limits<double>::infinity();
  const Eigen::VectorXd a = llt.solve(ys_);
  const double q = ys_.dot(a);
  const double s2 = std::max(q / static_cast<double>(n), 1e-12);
  double log_det = 0;
  for (Eigen::Index i = 0; i < n; ++i) log_det += std::log(llt.matrixLLT()(i, i));
  const double lml = -0.5 * n * std::log(s2) - log_det - 0.5 * n - 0.5 * n * kLog2Pi;
  if (keep) {
    hyper_.length = length;
    hyper_.signal = s2;
    hyper_.noise = g * s2;
    llt_ = Eigen::LLT<Eigen::MatrixXd>(s2 * C);
    alpha_ = a / s2;
    lml_ = lml;
  }
  return lml;
}

void GaussianProcess::fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, bool optimize) {
  const int d = static_cast<int>(X.cols());
  X_ = X;
  y_mean_ = y.size() ? y.mean() : 0.0;
  const double var = y.size() > 1 ? (y.array() - y_mean_).square().sum() / (y.size() - 1) : 0.0;
  y_scale_ = var > 1e-300 ? std::sqrt(var) : 1.0;
  ys_ = (y.array() - y_mean_) / y_scale_;
  if (static_cast<int>(hyper_.length.size()) != d) hyper_.length.assign(d, 0.3);
  if (X_.rows() == 0) return;
  if (!optimize) {
    const Eigen::Index n = X_.rows();
    Eigen::MatrixXd K = hyper_.signal * correlation(X_, X_, hyper_.length);
    K.diagonal().array() += hyper_.noise + 1e-10;
    llt_ = Eigen::LLT<Eigen::MatrixXd>(K);
    alpha_ = llt_.solve(ys_);
    double log_det = 0;
    for (Eigen::Index i = 0; i < n; ++i) log_det += std::log(llt_.matrixLLT()(i, i));
    lml_ = -0.5 * ys_.dot(alpha_) - log_det - 0.5 * n * kLog2Pi;
    return;
  }
  // A grid over one shared length scale and the noise ratio...
  std::vector<double> best_len(d, 0.3);
  double best_g = 1e-4, best = -std::numeric_limits<double>::infinity();
  for (double l : {0.05, 0.1, 0.2, 0.35, 0.6, 1.0, 2.0, 4.0})
    for (double g : {1e-6, 1e-4, 1e-3, 1e-2, 0.05, 0.2}) {
      const std::vector<double> len(d, l);
      const double v = profile(len, g, false);
      if (v > best) { best = v; best_len = len; best_g = g; }
    }
  // ...then each dimension's own length scale, coordinate by coordinate.
  for (double f : {4.0, 2.0, 1.4}) {
    for (int k = 0; k < d; ++k) {
      if (X_.col(k).maxCoeff() == X_.col(k).minCoeff()) continue;  // nothing to learn from
      for (double m : {f, 1.0 / f}) {
        std::vector<double> len = best_len;
        len[k] = std::clamp(len[k] * m, kMinLength, kMaxLength);
        const double v = profile(len, best_g, false);
        if (v > best + 1e-9) { best = v; best_len = len; }
      }
    }
  }
  profile(best_len, best_g, true);
}

void GaussianProcess::predict(const Eigen::MatrixXd& Xs, Eigen::VectorXd& mean, Eigen::VectorXd& var) const {
  const Eigen::Index m = Xs.rows();
  if (X_.rows() == 0) {
    mean = Eigen::VectorXd::Constant(m, y_mean_);
    var = Eigen::VectorXd::Constant(m, hyper_.signal * y_scale_ * y_scale_);
    return;
  }
  Eigen::MatrixXd Ks = hyper_.signal * correlation(X_, Xs, hyper_.length);  // (n, m)
  mean = (Ks.transpose() * alpha_).array() * y_scale_ + y_mean_;
  llt_.matrixL().solveInPlace(Ks);
  var = (hyper_.signal - Ks.colwise().squaredNorm().transpose().array()).max(0.0) * y_scale_ * y_scale_;
}

}  // namespace kforge
