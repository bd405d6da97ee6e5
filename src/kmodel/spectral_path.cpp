// The regularization path by majorization-minimization in the kernel matrix's eigenbasis.
//
// With f = K alpha + b and g_i = y_i L'(y_i f_i), the loss's curvature bound c gives the
// majorizer (1/n)[sum L + g.df + (c/2)|df|^2] + (lambda/2) alpha'^T K alpha', df = K dalpha + db.
// Its minimizer solves (c K + n lambda I) dalpha = -g - n lambda alpha - c db 1 together with
// 1^T g + c 1^T (K dalpha + n db) = 0 (b's row, unpenalized): in U's basis (beta = U^T alpha,
// w = U^T 1, d_k = c s_k + n lambda) dalpha is diagonal, and db comes from one scalar equation
// (the Schur complement of the diagonal block). So one step is U^T g and U (s * beta): two
// matrix-vector products, never a new factorization. Steps are accelerated by Nesterov momentum
// (the majorizer is a fixed metric, so this is FISTA in that metric), restarted when the
// objective rises.
//
// Cross-validation runs this on the spectrum of the WHOLE kernel matrix with the loss summed over
// one fold's training rows only (fit_path_rows; TorchKM's idea for its CV refits): the majorizer
// keeps c |df|^2 over ALL rows (an upper bound of the masked c sum_train df_i^2, so still a
// majorizer, and still diagonal in U's basis), the penalty is the training count's n_t lambda, and
// every minimizer's function lies in the span of the training rows' kernel columns (the
// representer theorem): alpha = -g / (n_t lambda) vanishes on the held-out rows. So one
// decomposition serves every fold, the fit is the fold's own, and its alpha is read off the
// training rows. In b's equation 1^T 1 is then ALL rows' count (the majorizer's |df|^2).
//
// Only the r eigenpairs with s_k > rank_tol * s_max are iterated on: the others do not move f or
// the objective. Their coefficients are set at the end so that alpha = -g / (n lambda), the
// representer form every minimizer has; so alpha is the full problem's, and predictions at new
// points (K(new, train) alpha + b) see every direction.
#include <cmath>
#include <stdexcept>

#include "kforge/kmodel.hpp"
#include "kmodel/blas.hpp"

namespace kforge::kmodel {
namespace {

struct Point {
  Eigen::VectorXd beta, f;  // coefficients on the r kept eigenvectors; fitted values on the rows
  double b = 0;
};

}  // namespace

std::vector<Fit> fit_path_rows(const Spectrum& sp, const Eigen::VectorXd& y, const std::vector<Eigen::Index>& rows,
                               const SolverOptions& o, const std::vector<double>& lambdas, bool warm) {
  if (o.loss == Loss::hinge) throw std::invalid_argument("fit_path: the hinge's path is fit_path_smo");
  const Eigen::Index n = y.size();
  if (sp.u.rows() != n) throw std::invalid_argument("fit_path_rows: the spectrum and y differ in rows");
  if (rows.empty()) throw std::invalid_argument("fit_path_rows: no rows to fit");
  for (const Eigen::Index i : rows)
    if (i < 0 || i >= n) throw std::invalid_argument("fit_path_rows: a row index is out of range");
  // nd: the rows the loss sums over (the penalty's n_t); n_all: 1^T 1 of the majorizer.
  const double nd = static_cast<double>(rows.size()), n_all = static_cast<double>(n);
  const double c = curvature_bound(o.loss, o.delta);
  const double tol = o.tol > 0 ? o.tol : 1e-4;
  const int max_iter = o.max_iter > 0 ? o.max_iter : 20000;
  const double s_max = sp.s.size() > 0 ? sp.s.maxCoeff() : 0;
  // Eigenvalues ascend: the kept ones are the last r (a partial spectrum's missing ones are 0).
  Eigen::Index r = 0;
  for (Eigen::Index k = 0; k < sp.s.size(); ++k) r += sp.s[k] > o.rank_tol * s_max;
  const auto u = sp.u.rightCols(r);  // (n, r)
  const double* u_data = sp.u.data() + (sp.u.cols() - r) * n;  // the same block, for OpenBLAS
  Eigen::VectorXd sb(r);
  const Eigen::ArrayXd s = sp.s.tail(r).array();
  const Eigen::ArrayXd w = (u.transpose() * Eigen::VectorXd::Ones(n)).array();  // U_r^T 1
  const double w_rest = std::max(0.0, n_all - w.square().sum());  // |U_null^T 1|^2

  auto objective_at = [&](double lambda, const Point& p) {
    double sum = 0;
    for (const Eigen::Index i : rows) sum += loss_value(o.loss, o.delta, y[i] * p.f[i]);
    return sum / nd + 0.5 * lambda * (s * p.beta.array().square()).sum();
  };
  Eigen::VectorXd g = Eigen::VectorXd::Zero(n), gh(r);  // g stays 0 off `rows`
  auto slopes_at = [&](const Point& p) {  // g and gh = U_r^T g at p
    for (const Eigen::Index i : rows) g[i] = y[i] * loss_slope(o.loss, o.delta, y[i] * p.f[i]);
    if (r > 0) blas::gemv(/*trans=*/true, u_data, n, r, n, g.data(), gh.data());
  };

  std::vector<Fit> out;
  const Point zero{Eigen::VectorXd::Zero(r), Eigen::VectorXd::Zero(n), 0};
  Point x = zero;
  for (const double lambda : lambdas) {
    if (!warm) x = zero;
    const double nl = nd * lambda;
    const Eigen::ArrayXd d = c * s + nl;
    const Eigen::ArrayXd m = w / d;
    // db's denominator c n - c^2 w^T (s * m), written as a sum of nonnegative terms (the null
    // directions have s = 0, d = n lambda: each adds c w_k^2).
    const double schur = c * (w_rest + (w.square() * nl / d).sum());
    Fit fit;
    fit.lambda = lambda;
    fit.rank = static_cast<int>(r);
    Point yk = x;
    double t = 1, f_prev = objective_at(lambda, x);
    bool have_slopes = false;  // g, gh belong to x
    for (int it = 0; it < max_iter; ++it) {
      slopes_at(yk);
      // The relative KKT residual at yk (kkt_residual's, in U's basis; the null directions'
      // part is zero by the choice of alpha there).
      const double g2 = g.squaredNorm(), gh2 = gh.squaredNorm();
      const double nl_alpha = std::sqrt(nl * nl * yk.beta.squaredNorm() + std::max(0.0, g2 - gh2));
      const double den = std::sqrt(g2) + nl_alpha, den_b = g.lpNorm<1>();
      fit.kkt = std::max(den > 0 ? (gh + nl * yk.beta).norm() / den : 0.0,
                         den_b > 0 ? std::abs(g.sum()) / den_b : 0.0);
      fit.iterations = it;
      if (fit.kkt <= tol) {
        fit.converged = true;
        x = yk;
        have_slopes = true;
        break;
      }
      const Eigen::ArrayXd a = (-gh.array() - nl * yk.beta.array()) / d;
      const double db = -(g.sum() + c * (w * s * a).sum()) / schur;
      Point next;
      next.beta = yk.beta + (a - c * db * m).matrix();
      next.b = yk.b + db;
      sb = (s * next.beta.array()).matrix();
      next.f.resize(n);
      if (r > 0) blas::gemv(/*trans=*/false, u_data, n, r, n, sb.data(), next.f.data());
      else next.f.setZero();
      next.f.array() += next.b;
      const double f_next = objective_at(lambda, next);
      if (o.accelerate && f_next <= f_prev) {
        const double t_next = (1 + std::sqrt(1 + 4 * t * t)) / 2, mom = (t - 1) / t_next;
        yk.beta = next.beta + mom * (next.beta - x.beta);
        yk.b = next.b + mom * (next.b - x.b);
        yk.f = next.f + mom * (next.f - x.f);
        t = t_next;
      } else {
        // No momentum, or a restart (the objective rose): the plain MM step from `next`, which
        // never increases the objective.
        yk = next;
        t = 1;
      }
      x = std::move(next);
      f_prev = f_next;
      fit.iterations = it + 1;
    }
    if (!have_slopes) slopes_at(x);
    // alpha = U_r beta + U_null (-U_null^T g / (n lambda)), U_null U_null^T = I - U_r U_r^T.
    const Eigen::VectorXd alpha = u * x.beta - (g - u * gh) / nl;
    fit.alpha.resize(static_cast<Eigen::Index>(rows.size()));  // off `rows` alpha is ~0 (converged)
    for (std::size_t i = 0; i < rows.size(); ++i) fit.alpha[static_cast<Eigen::Index>(i)] = alpha[rows[i]];
    fit.b = x.b;
    fit.objective = objective_at(lambda, x);
    out.push_back(std::move(fit));
  }
  return out;
}

std::vector<Fit> fit_path(const Spectrum& sp, const Eigen::VectorXd& y, const SolverOptions& o,
                          const std::vector<double>& lambdas, bool warm) {
  std::vector<Eigen::Index> all(static_cast<std::size_t>(y.size()));
  for (Eigen::Index i = 0; i < y.size(); ++i) all[static_cast<std::size_t>(i)] = i;
  return fit_path_rows(sp, y, all, o, lambdas, warm);
}

}  // namespace kforge::kmodel
