// The three losses of a margin t = y f, their slopes and curvature bounds, and the objective and
// KKT residual computed from K directly (independent of the solvers, for checking them).
#include <cmath>
#include <stdexcept>

#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"

namespace kforge::kmodel {
namespace {

// SMO's optimality measure from K: with v = y - K alpha (v_t is the b that would put row t on
// its margin), the rows that may still move up (alpha_t below its upper bound: C for y = +1, 0
// for y = -1) need b >= v_t and those that may move down need b <= v_t; the gap is how far
// max_up v exceeds min_down v.
double hinge_kkt_gap(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, double lambda, const Eigen::VectorXd& alpha) {
  const double c = 1 / (static_cast<double>(y.size()) * lambda), slack = 1e-12 * c;
  if (std::abs(alpha.sum()) > 1e-9 * c * static_cast<double>(y.size())) return INFINITY;
  const Eigen::VectorXd v = y - k * alpha;
  double up = -INFINITY, down = INFINITY;
  for (Eigen::Index t = 0; t < y.size(); ++t) {
    const double lo = y[t] > 0 ? 0 : -c, hi = y[t] > 0 ? c : 0;
    if (alpha[t] < lo - slack || alpha[t] > hi + slack) return INFINITY;
    if (alpha[t] < hi - slack) up = std::max(up, v[t]);
    if (alpha[t] > lo + slack) down = std::min(down, v[t]);
  }
  return std::max(0.0, up - down);
}

}  // namespace

Loss parse_loss(const std::string& s) {
  if (s == "hinge") return Loss::hinge;
  if (s == "huberized-hinge") return Loss::huber_hinge;
  if (s == "logistic") return Loss::logistic;
  throw UsageError("--loss " + s + ": use hinge, huberized-hinge (svm) or logistic (logreg)");
}

const char* loss_name(Loss l) {
  return l == Loss::hinge ? "hinge" : l == Loss::huber_hinge ? "huberized-hinge" : "logistic";
}

const char* model_name(Loss l) { return l == Loss::logistic ? "logreg" : "svm"; }

Loss loss_of_model(const std::string& model, const std::string& loss) {
  if (model != "svm" && model != "logreg") throw UsageError("model " + model + ": use svm or logreg");
  if (loss.empty()) return model == "svm" ? Loss::hinge : Loss::logistic;
  const Loss l = parse_loss(loss);
  if ((model == "svm") != (l != Loss::logistic))
    throw UsageError("--loss " + loss + " is not a loss of " + model +
                     (model == "svm" ? " (hinge or huberized-hinge)" : " (logistic)"));
  return l;
}

// Huberized hinge: 0 above 1, (1-t)^2/(2 delta) on (1-delta, 1], 1 - t - delta/2 below: the
// hinge with its corner rounded over a width delta (delta -> 0 is the hinge).
double loss_value(Loss l, double delta, double t) {
  if (l == Loss::hinge) return t < 1 ? 1 - t : 0;
  if (l == Loss::logistic) return t > 0 ? std::log1p(std::exp(-t)) : -t + std::log1p(std::exp(t));
  if (t > 1) return 0;
  if (t > 1 - delta) return (1 - t) * (1 - t) / (2 * delta);
  return 1 - t - delta / 2;
}

double loss_slope(Loss l, double delta, double t) {
  if (l == Loss::hinge) return t < 1 ? -1 : 0;  // a subgradient
  if (l == Loss::logistic) return t > 0 ? -std::exp(-t) / (1 + std::exp(-t)) : -1 / (1 + std::exp(t));
  if (t > 1) return 0;
  if (t > 1 - delta) return -(1 - t) / delta;
  return -1;
}

double curvature_bound(Loss l, double delta) {
  if (l == Loss::hinge) throw std::logic_error("the hinge has no curvature bound: its path is fit_path_smo");
  return l == Loss::logistic ? 0.25 : 1 / delta;
}

double objective(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o, double lambda,
                 const Eigen::VectorXd& alpha, double b) {
  const Eigen::VectorXd ka = k * alpha;
  double sum = 0;
  for (Eigen::Index i = 0; i < y.size(); ++i) sum += loss_value(o.loss, o.delta, y[i] * (ka[i] + b));
  return sum / static_cast<double>(y.size()) + 0.5 * lambda * alpha.dot(ka);
}

double kkt_residual(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o, double lambda,
                    const Eigen::VectorXd& alpha, double b) {
  if (o.loss == Loss::hinge) return hinge_kkt_gap(k, y, lambda, alpha);
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
