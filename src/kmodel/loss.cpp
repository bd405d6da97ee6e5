// The two losses of a margin t = y f, their slopes and curvature bounds, and the objective and
// KKT residual computed from K directly (independent of the spectral solver, for checking it).
#include <cmath>

#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"

namespace kforge::kmodel {

Loss parse_loss(const std::string& s) {
  if (s == "svm") return Loss::huber_hinge;
  if (s == "logreg") return Loss::logistic;
  throw UsageError("model " + s + ": use svm (Huberized hinge) or logreg (logistic)");
}

const char* loss_name(Loss l) { return l == Loss::huber_hinge ? "svm" : "logreg"; }

// Huberized hinge: 0 above 1, (1-t)^2/(2 delta) on (1-delta, 1], 1 - t - delta/2 below: the
// hinge with its corner rounded over a width delta (delta -> 0 is the hinge).
double loss_value(Loss l, double delta, double t) {
  if (l == Loss::logistic) return t > 0 ? std::log1p(std::exp(-t)) : -t + std::log1p(std::exp(t));
  if (t > 1) return 0;
  if (t > 1 - delta) return (1 - t) * (1 - t) / (2 * delta);
  return 1 - t - delta / 2;
}

double loss_slope(Loss l, double delta, double t) {
  if (l == Loss::logistic) return t > 0 ? -std::exp(-t) / (1 + std::exp(-t)) : -1 / (1 + std::exp(t));
  if (t > 1) return 0;
  if (t > 1 - delta) return -(1 - t) / delta;
  return -1;
}

double curvature_bound(Loss l, double delta) { return l == Loss::logistic ? 0.25 : 1 / delta; }

double objective(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o, double lambda,
                 const Eigen::VectorXd& alpha, double b) {
  const Eigen::VectorXd ka = k * alpha;
  double sum = 0;
  for (Eigen::Index i = 0; i < y.size(); ++i) sum += loss_value(o.loss, o.delta, y[i] * (ka[i] + b));
  return sum / static_cast<double>(y.size()) + 0.5 * lambda * alpha.dot(ka);
}

double kkt_residual(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o, double lambda,
                    const Eigen::VectorXd& alpha, double b) {
  const Eigen::VectorXd f = (k * alpha).array() + b;
  Eigen::VectorXd g(y.size());
  for (Eigen::Index i = 0; i < y.size(); ++i) g[i] = y[i] * loss_slope(o.loss, o.delta, y[i] * f[i]);
  const double nl = static_cast<double>(y.size()) * lambda;
  const double den = g.norm() + nl * alpha.norm(), den_b = g.lpNorm<1>();
  const double r_alpha = den > 0 ? (g + nl * alpha).norm() / den : 0;
  const double r_b = den_b > 0 ? std::abs(g.sum()) / den_b : 0;
  return std::max(r_alpha, r_b);
}

}  // namespace kforge::kmodel
