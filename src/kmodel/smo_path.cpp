// The hinge loss's regularization path, exactly: SMO on the dual box QP over a precomputed kernel
// matrix, warm-started from one lambda to the next.
//
// The dual of (1/n) sum hinge(y_i f_i) + (lambda/2) alpha^T K alpha (b free) is, with a_i = y_i
// alpha_i and C = 1/(n lambda):  minimize (1/2) a^T Q a - 1^T a over 0 <= a <= C, y^T a = 0.
// Written in alpha (alpha_t in [0, C] for y_t = +1, [-C, 0] for y_t = -1, sum alpha = 0) the
// gradient becomes one vector v = y - K alpha: v_t is the intercept that would put row t exactly
// on its margin. A pair step alpha_i += t, alpha_j -= t keeps the sum; it lowers the dual when
// v_i > v_j, by (v_i - v_j) t - (t^2/2) (K_ii + K_jj - 2 K_ij), and moves v by -t (K_:i - K_:j).
// Optimality is max over "may move up" of v <= min over "may move down" of v (then b lies
// between): the maximal violating pair's gap m - M is the stopping measure (libsvm's).
//
// Working set: i the largest v among rows that may move up, j the row that may move down whose
// pair step with i lowers the dual the most (the second-order rule of Fan, Chen and Lin, JMLR
// 2005). Each step reads two columns of K and the vectors: O(n), no kernel evaluation, since the
// fold's Gram block is already in memory (computed once for all rows, cut per fold).
//
// Shrinking: rows that sit at a bound and cannot be part of a violating pair leave the scans
// (checked every 100 steps); all come back, with v recomputed, before the stop is judged.
//
// Warm start (alpha seeding): a from lambda's solution times C_new / C_old is feasible at the
// smaller lambda (C grows), keeps y^T a = 0 and keeps the rows at the bound at the bound, which
// most of them stay at on noisy data; v = y - K alpha scales with it in O(n). v is recomputed
// from K (O(n * #SV)) once at the end of each lambda that took steps: rounding drift, shrinking.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kforge/kmodel.hpp"

namespace kforge::kmodel {
namespace {

constexpr double kTau = 1e-12;  // the pair's curvature when K_ii + K_jj - 2 K_ij <= 0 (duplicate rows)

// v = y - K alpha, reading only the columns where alpha != 0.
void recompute_v(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const Eigen::VectorXd& alpha, Eigen::VectorXd& v) {
  v = y;
  for (Eigen::Index j = 0; j < alpha.size(); ++j)
    if (alpha[j] != 0) v.noalias() -= alpha[j] * k.col(j);
}

}  // namespace

std::vector<Fit> fit_path_smo(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o,
                              const std::vector<double>& lambdas, bool warm) {
  const Eigen::Index n = y.size();
  const double nd = static_cast<double>(n);
  const double tol = o.tol > 0 ? o.tol : 1e-3;
  const long max_iter = o.max_iter > 0 ? o.max_iter : std::max(10'000'000L, 100L * static_cast<long>(n));
  const Eigen::VectorXd kd = k.diagonal();
  const double* kp = k.data();
  const double* yp = y.data();

  Eigen::VectorXd alpha = Eigen::VectorXd::Zero(n), v = y, lo(n), hi(n);
  double c_prev = 0;
  std::vector<Fit> out;
  for (const double lambda : lambdas) {
    const double c = 1 / (nd * lambda);
    if (!warm || c_prev == 0) {
      alpha.setZero();
      v = y;
    } else {
      // Seed: scale by C / C_prev; the rows at a bound go to the new bound exactly.
      const double ratio = c / c_prev;
      for (Eigen::Index t = 0; t < n; ++t) {
        const double a = std::abs(alpha[t]);
        alpha[t] = a == c_prev ? std::copysign(c, alpha[t]) : std::clamp(alpha[t] * ratio, -c, c);
      }
      // K alpha scales with alpha, so v = y - K alpha follows in O(n) (the snapped bounds differ
      // from the scaled values by a rounding); the previous lambda ended with v exact from K.
      v = y - ratio * (y - v);
    }
    c_prev = c;
    for (Eigen::Index t = 0; t < n; ++t) {
      lo[t] = yp[t] > 0 ? 0 : -c;
      hi[t] = yp[t] > 0 ? c : 0;
    }
    double* ap = alpha.data();
    double* vp = v.data();
    const double* lop = lo.data();
    const double* hip = hi.data();

    // The rows the steps scan: all, less those shrunk (below).
    std::vector<Eigen::Index> active(static_cast<std::size_t>(n));
    for (Eigen::Index t = 0; t < n; ++t) active[static_cast<std::size_t>(t)] = t;
    // The extremes of v over the active rows that may move up (i's candidates) and down.
    double g_up = -INFINITY, g_down = INFINITY;
    Eigen::Index i = -1;
    auto scan = [&] {
      g_up = -INFINITY;
      g_down = INFINITY;
      i = -1;
      for (const Eigen::Index t : active) {
        if (ap[t] < hip[t] && vp[t] > g_up) {
          g_up = vp[t];
          i = t;
        }
        if (ap[t] > lop[t]) g_down = std::min(g_down, vp[t]);
      }
    };
    // Shrinking: a row at a bound that no violating pair can use while the extremes stay where
    // they are (at its lower bound, only moving up, with v_t below every down-row's v; or the
    // mirror) leaves the scans. Its v goes stale; when the active rows meet tol, v is
    // recomputed for all from K and every row comes back, so the stop is judged on all rows.
    // Every 100 steps (libsvm's interval is 1000, but warm-started fits here take a few hundred).
    const long shrink_every = std::min<long>(static_cast<long>(n), 100);
    auto shrink = [&] {
      std::size_t kept = 0;
      for (const Eigen::Index t : active) {
        const bool gone = (ap[t] == lop[t] && vp[t] < g_down) || (ap[t] == hip[t] && vp[t] > g_up);
        if (!gone) active[kept++] = t;
      }
      active.resize(kept);
    };
    scan();
    Fit fit;
    fit.lambda = lambda;
    long it = 0, next_shrink = shrink_every, it_start = 0;
    bool stuck = false;  // no j found: only a NaN in K gets here
    for (;;) {
      it_start = it;
      for (; it < max_iter && i >= 0 && g_up - g_down > tol; ++it) {
        if (o.shrinking && it >= next_shrink) {
          shrink();
          next_shrink = it + shrink_every;
        }
        // j: among the rows that may move down with v_j < v_i, the largest dual decrease
        // (v_i - v_j)^2 / (2 q_ij), q_ij = K_ii + K_jj - 2 K_ij.
        const double* ki = kp + i * n;
        const double kii = kd[i];
        Eigen::Index j = -1;
        double best = -1;
        for (const Eigen::Index t : active) {
          if (!(ap[t] > lop[t]) || !(vp[t] < g_up)) continue;
          const double b = g_up - vp[t];
          double q = kii + kd[t] - 2 * ki[t];
          if (q <= 0) q = kTau;
          const double gain = b * b / q;
          if (gain > best) {
            best = gain;
            j = t;
          }
        }
        if (j < 0) {  // cannot happen while g_up > g_down and K is finite
          stuck = true;
          break;
        }
        const double* kj = kp + j * n;
        double q = kii + kd[j] - 2 * ki[j];
        if (q <= 0) q = kTau;
        // The unconstrained step, clipped so that both stay in their boxes; a clipped one lands
        // exactly on the bound (the sets above compare against it exactly).
        double step = (vp[i] - vp[j]) / q;
        const double room_i = hip[i] - ap[i], room_j = ap[j] - lop[j];
        if (step >= room_i) step = room_i;
        if (step >= room_j) step = room_j;
        ap[i] = step == room_i ? hip[i] : ap[i] + step;
        ap[j] = step == room_j ? lop[j] : ap[j] - step;
        // v -= step (K_:i - K_:j) on the active rows, fused with the next scan.
        g_up = -INFINITY;
        g_down = INFINITY;
        i = -1;
        for (const Eigen::Index t : active) {
          const double vt = vp[t] - step * (ki[t] - kj[t]);
          vp[t] = vt;
          if (ap[t] < hip[t] && vt > g_up) {
            g_up = vt;
            i = t;
          }
          if (ap[t] > lop[t]) g_down = std::min(g_down, vt);
        }
      }
      // v drifts by rounding over many steps, and is stale on shrunk rows: recompute it from K
      // for all rows to judge the stop and place b (and go on, all rows active, if the gap is
      // still above tol).
      if (it > it_start) recompute_v(k, y, alpha, v);  // no step: v is still the exact one
      active.resize(static_cast<std::size_t>(n));
      for (Eigen::Index t = 0; t < n; ++t) active[static_cast<std::size_t>(t)] = t;
      next_shrink = it + shrink_every;
      scan();
      if (stuck || it >= max_iter || i < 0 || g_up - g_down <= tol) break;
    }
    fit.iterations = static_cast<int>(std::min<long>(it, std::numeric_limits<int>::max()));
    fit.kkt = std::max(0.0, g_up - g_down);
    fit.converged = fit.kkt <= tol;
    double sum_free = 0;
    int free = 0;
    for (Eigen::Index t = 0; t < n; ++t) {
      if (ap[t] > lop[t] && ap[t] < hip[t]) {
        sum_free += vp[t];
        ++free;
      }
      fit.support_vectors += ap[t] != 0;
    }
    // b: on the margin of every free support vector (their mean, against rounding), else the
    // middle of the interval [max up v, min down v] that the bounded rows allow.
    fit.b = free > 0 ? sum_free / free : (std::isfinite(g_up) && std::isfinite(g_down) ? (g_up + g_down) / 2
                                                         : std::isfinite(g_up) ? g_up : g_down);
    fit.alpha = alpha;
    // Primal objective: f = K alpha + b = y - v + b.
    double loss = 0;
    for (Eigen::Index t = 0; t < n; ++t) loss += loss_value(Loss::hinge, 0, yp[t] * (yp[t] - vp[t] + fit.b));
    fit.objective = loss / nd + 0.5 * lambda * alpha.dot(y - v);
    out.push_back(std::move(fit));
  }
  return out;
}

}  // namespace kforge::kmodel
