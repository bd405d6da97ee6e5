// The regularization path by majorization-minimization in the kernel matrix's eigenbasis.
//
// With f = K alpha + b and g_i = y_i L'(y_i f_i), the loss's curvature bound c gives the
// majorizer (1/n)[sum L + g.df + (c/2)|df|^2] + (lambda/2) alpha'^T K alpha', df = K dalpha + db.
// Its minimizer solves (c K + n lambda I) dalpha = -g - n lambda alpha - c db 1 together with
// 1^T g + c 1^T (K dalpha + n db) = 0 (b's row, unpenalized): in U's basis (beta = U^T alpha,
// w = U^T 1, d_k = c s_k + n lambda) dalpha is diagonal, and db comes from one scalar equation
// (the Schur complement of the diagonal block). So one step is U^T g and U (s * beta): two
// n x n matrix-vector products. Steps are accelerated by Nesterov momentum (the majorizer is a
// fixed metric, so this is FISTA in that metric), restarted when the objective rises.
#include <cmath>

#include "kforge/kmodel.hpp"

namespace kforge::kmodel {
namespace {

struct Point {
  Eigen::VectorXd beta, f;  // coefficients in U's basis; fitted values on the training rows
  double b = 0;
};

double loss_sum(const SolverOptions& o, const Eigen::VectorXd& y, const Eigen::VectorXd& f) {
  double s = 0;
  for (Eigen::Index i = 0; i < y.size(); ++i) s += loss_value(o.loss, o.delta, y[i] * f[i]);
  return s;
}

double objective_at(const SolverOptions& o, const Spectrum& sp, const Eigen::VectorXd& y, double lambda,
                    const Point& p) {
  const double n = static_cast<double>(y.size());
  return loss_sum(o, y, p.f) / n + 0.5 * lambda * (sp.s.array() * p.beta.array().square()).sum();
}

}  // namespace

std::vector<Fit> fit_path(const Spectrum& sp, const Eigen::VectorXd& y, const SolverOptions& o,
                          const std::vector<double>& lambdas, bool warm) {
  const Eigen::Index n = y.size();
  const double nd = static_cast<double>(n), c = curvature_bound(o.loss, o.delta);
  const Eigen::VectorXd w = sp.u.transpose() * Eigen::VectorXd::Ones(n);
  std::vector<Fit> out;
  Point x{Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n), 0};
  Eigen::VectorXd g(n);
  for (const double lambda : lambdas) {
    if (!warm) x = Point{Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n), 0};
    const double nl = nd * lambda;
    const Eigen::ArrayXd d = c * sp.s.array() + nl;
    const Eigen::ArrayXd m = w.array() / d;
    // db's denominator c n - c^2 w^T (s * m), written as a sum of positive terms.
    const double schur = c * (w.array().square() * nl / d).sum();
    Fit fit;
    fit.lambda = lambda;
    Point yk = x;
    double t = 1, f_prev = objective_at(o, sp, y, lambda, x);
    for (int it = 0; it < o.max_iter; ++it) {
      for (Eigen::Index i = 0; i < n; ++i) g[i] = y[i] * loss_slope(o.loss, o.delta, y[i] * yk.f[i]);
      const Eigen::VectorXd gh = sp.u.transpose() * g;  // U^T g
      // The KKT residual at yk (see kkt_residual): U is orthogonal, so norms carry over.
      const double den = g.norm() + nl * yk.beta.norm(), den_b = g.lpNorm<1>();
      const double r = std::max(den > 0 ? (gh + nl * yk.beta).norm() / den : 0.0,
                                den_b > 0 ? std::abs(g.sum()) / den_b : 0.0);
      fit.kkt = r;
      fit.iterations = it;
      if (r <= o.tol) { fit.converged = true; x = yk; break; }
      const Eigen::ArrayXd a = (-gh.array() - nl * yk.beta.array()) / d;
      const double db = -(g.sum() + c * (w.array() * sp.s.array() * a).sum()) / schur;
      Point next;
      next.beta = yk.beta + (a - c * db * m).matrix();
      next.b = yk.b + db;
      next.f = (sp.u * (sp.s.array() * next.beta.array()).matrix()).array() + next.b;
      const double f_next = objective_at(o, sp, y, lambda, next);
      if (o.accelerate && f_next <= f_prev) {
        const double t_next = (1 + std::sqrt(1 + 4 * t * t)) / 2, mom = (t - 1) / t_next;
        yk.beta = next.beta + mom * (next.beta - x.beta);
        yk.b = next.b + mom * (next.b - x.b);
        yk.f = next.f + mom * (next.f - x.f);
        t = t_next;
      } else {
        // No momentum (or a restart: the objective rose): the plain MM step from `next`,
        // which never increases the objective.
        yk = next;
        t = 1;
      }
      x = std::move(next);
      f_prev = f_next;
      fit.iterations = it + 1;
    }
    fit.alpha = sp.u * x.beta;
    fit.b = x.b;
    fit.objective = objective_at(o, sp, y, lambda, x);
    out.push_back(std::move(fit));
  }
  return out;
}

}  // namespace kforge::kmodel
