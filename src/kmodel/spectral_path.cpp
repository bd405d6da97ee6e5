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
// The folds run in lockstep (fit_path_folds): per lambda, each step takes U^T G and U (S B) for
// every fold still iterating as ONE matrix product (G, B: a column per fold), so the n x r U is
// read once per step for all folds instead of once per fold: with r = n (a full-rank kernel
// matrix) the path is bound by that read. Each fold keeps its own momentum, restarts and stop.
// With the float steps (the default) both products go in ONE pass over U's rows (run_one_pass,
// skinny::fused_row_pass): f for a block of rows, the slopes there, U_blk^T g from cache.
//
// Only the r eigenpairs with s_k > rank_tol * s_max are iterated on: the others do not move f or
// the objective. Their coefficients are set at the end so that alpha = -g / (n lambda), the
// representer form every minimizer has; so alpha is the full problem's, and predictions at new
// points (K(new, train) alpha + b) see every direction.
#include <cmath>
#include <stdexcept>

#include "kforge/kmodel.hpp"
#include "kmodel/blas.hpp"
#include "kmodel/skinny_products.hpp"

namespace kforge::kmodel {
namespace {

struct Point {
  Eigen::VectorXd beta, f;  // coefficients on the r kept eigenvectors; fitted values on the rows
  double b = 0;
};

// C (m, k) = A^T B or A B for column-major blocks: A is (n, r) with leading dimension lda.
void gemm_cols(bool trans, const double* a, Eigen::Index n, Eigen::Index r, Eigen::Index lda, const double* b,
               Eigen::Index ldb, double* c, Eigen::Index ldc, Eigen::Index k) {
  const Eigen::Index m = trans ? r : n, inner = trans ? n : r;
  cblas_dgemm(CblasColMajor, trans ? CblasTrans : CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(k), static_cast<blasint>(inner), 1.0, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), 0.0, c, static_cast<blasint>(ldc));
}

}  // namespace

std::vector<std::vector<Fit>> fit_path_folds(const Spectrum& sp, const Eigen::VectorXd& y,
                                             const std::vector<std::vector<Eigen::Index>>& folds,
                                             const SolverOptions& o, const std::vector<double>& lambdas, bool warm) {
  if (o.loss == Loss::hinge) throw std::invalid_argument("fit_path: the hinge's path is fit_path_smo");
  const Eigen::Index n = y.size();
  if (sp.u.rows() != n) throw std::invalid_argument("fit_path_rows: the spectrum and y differ in rows");
  for (const auto& rows : folds) {
    if (rows.empty()) throw std::invalid_argument("fit_path_rows: no rows to fit");
    for (const Eigen::Index i : rows)
      if (i < 0 || i >= n) throw std::invalid_argument("fit_path_rows: a row index is out of range");
  }
  const Eigen::Index nf = static_cast<Eigen::Index>(folds.size());
  const double n_all = static_cast<double>(n);  // 1^T 1 of the majorizer (all rows)
  const double c = curvature_bound(o.loss, o.delta);
  const double tol = o.tol > 0 ? o.tol : 1e-4;
  const int max_iter = o.max_iter > 0 ? o.max_iter : 20000;
  const double s_max = sp.s.size() > 0 ? sp.s.maxCoeff() : 0;
  // Eigenvalues ascend: the kept ones are the last r (a partial spectrum's missing ones are 0).
  Eigen::Index r = 0;
  for (Eigen::Index k = 0; k < sp.s.size(); ++k) r += sp.s[k] > o.rank_tol * s_max;
  const auto u = sp.u.rightCols(r);  // (n, r)
  const double* u_data = sp.u.data() + (sp.u.cols() - r) * n;  // the same block, for OpenBLAS
  const Eigen::ArrayXd s = sp.s.tail(r).array();
  const Eigen::ArrayXd w = (u.transpose() * Eigen::VectorXd::Ones(n)).array();  // U_r^T 1
  const double w_rest = std::max(0.0, n_all - w.square().sum());  // |U_null^T 1|^2

  struct Fold {
    const std::vector<Eigen::Index>* rows;
    double nd;  // the rows the loss sums over: the penalty's n_t
    Point x, yk;
    double t = 1, f_prev = 0;
    bool done = false, have_slopes = false;  // g, gh are at x
    Eigen::VectorXd g, gh;  // at x once done
    // One-pass steps (run_one_pass): the step being taken, its momentum, and whether g, gh are at yk.
    Point nx;
    double t_next = 1, mom = 0;
    bool fresh = false;
    std::vector<unsigned char> in;  // in[i]: row i is one of the fold's (training) rows
    Fit fit;
  };
  std::vector<Fold> st(static_cast<std::size_t>(nf));
  const Point zero{Eigen::VectorXd::Zero(r), Eigen::VectorXd::Zero(n), 0};
  for (Eigen::Index j = 0; j < nf; ++j) {
    st[j].rows = &folds[j];
    st[j].nd = static_cast<double>(folds[j].size());
    st[j].x = zero;
    st[j].nx = zero;
    st[j].g = Eigen::VectorXd::Zero(n);
    st[j].gh = Eigen::VectorXd::Zero(r);
    st[j].in.assign(static_cast<std::size_t>(n), 0);
    for (const Eigen::Index i : folds[j]) st[j].in[static_cast<std::size_t>(i)] = 1;
  }
  auto objective_at = [&](const Fold& fo, double lambda, const Point& p) {
    double sum = 0;
    for (const Eigen::Index i : *fo.rows) sum += loss_value(o.loss, o.delta, y[i] * p.f[i]);
    return sum / fo.nd + 0.5 * lambda * (s * p.beta.array().square()).sum();
  };
  auto slopes_into = [&](const Fold& fo, const Point& p, double* g) {  // 0 off the fold's rows
    std::fill(g, g + n, 0.0);
    for (const Eigen::Index i : *fo.rows) g[i] = y[i] * loss_slope(o.loss, o.delta, y[i] * p.f[i]);
  };
  // A column per fold still iterating: G (n), GH = U^T G (r), SB = s * beta_next (r), FN = U SB (n).
  Eigen::MatrixXd gm(n, nf), ghm(r, nf), sbm(r, nf), fnm(n, nf);
  // Single-precision steps (tol >= 1e-5): the two products in float halve the bytes of U read per
  // step; their relative error (~1e-6) is well below the stop, and every fold's end point is then
  // re-evaluated in double (below) before it is judged.
  const bool single = o.single_precision_steps && tol >= 1e-5 && r > 0;
  // The float products stream U (U^T G) and its transpose (U B) through skinny::column_dots:
  // OpenBLAS's sgemm would pack all of U on every call (as long as its kernel took, measured).
  const bool streamed = single && o.streamed_products;
  // One pass over U per float step (run_one_pass): needs the transpose the streamed steps keep.
  const bool one_pass = streamed && o.one_pass_steps &&
                        static_cast<std::size_t>(n) * static_cast<std::size_t>(r) * sizeof(float) >= o.one_pass_min_bytes;
  Eigen::MatrixXf uf, utf, in_f, out_f, g_f, gh_f;
  Eigen::MatrixXd utd;  // U^T in double for the streamed double products (made on first use)
  if (single) {
    // The one-pass steps read only U's rows (utf); the two-pass ones U's columns too (uf).
    if (one_pass) {
      utd = u.transpose();  // (r, n): U's rows contiguous, in double (the judgement's pass)
      utf = utd.cast<float>();  // a straight copy, not a second transpose
    } else {
      uf = u.cast<float>();
      if (streamed) utf = uf.transpose();
    }
    in_f.resize(std::max(n, r), nf);
    out_f.resize(std::max(n, r), nf);
    if (one_pass) {
      g_f.resize(n, nf);
      gh_f.resize(r, nf);
    }
  }
  // dst (m, k) = U^T src or U src, src and dst column-major with k columns (m: r or n).
  auto product = [&](bool trans, bool in_float, const Eigen::MatrixXd& src, Eigen::MatrixXd& dst, Eigen::Index k) {
    const Eigen::Index rows_in = trans ? n : r, rows_out = trans ? r : n;
    if (k == 0) return;
    if (r == 0) {
      dst.leftCols(k).setZero();
      return;
    }
    if (!in_float && o.streamed_products) {  // U^T src or U src as dots with U's columns or rows
      if (!trans && utd.size() == 0) utd = u.transpose();  // (r, n), once, when first needed
      skinny::column_dots(trans ? u_data : utd.data(), rows_in, rows_out, trans ? n : r, src.data(), src.rows(), k,
                          dst.data(), dst.rows());
      return;
    }
    if (!in_float) {
      gemm_cols(trans, u_data, n, r, n, src.data(), src.rows(), dst.data(), dst.rows(), k);
      return;
    }
    in_f.topLeftCorner(rows_in, k) = src.topLeftCorner(rows_in, k).cast<float>();
    if (streamed) {  // out (rows_out, k): dots of U's columns (trans) or rows with src's columns
      skinny::column_dots(trans ? uf.data() : utf.data(), rows_in, rows_out, trans ? n : r, in_f.data(), in_f.rows(), k,
                          out_f.data(), out_f.rows());
      dst.topLeftCorner(rows_out, k) = out_f.topLeftCorner(rows_out, k).cast<double>();
      return;
    }
    cblas_sgemm(CblasColMajor, trans ? CblasTrans : CblasNoTrans, CblasNoTrans, static_cast<blasint>(rows_out),
                static_cast<blasint>(k), static_cast<blasint>(rows_in), 1.0F, uf.data(), static_cast<blasint>(n),
                in_f.data(), static_cast<blasint>(in_f.rows()), 0.0F, out_f.data(), static_cast<blasint>(out_f.rows()));
    dst.topLeftCorner(rows_out, k) = out_f.topLeftCorner(rows_out, k).cast<double>();
  };
  // The relative KKT residual at beta (kkt_residual's, in U's basis; the null directions' part is
  // zero by the choice of alpha there).
  auto kkt_at = [&](double nl, const auto& g, const auto& gh, const Eigen::VectorXd& beta) {
    const double g2 = g.squaredNorm(), gh2 = gh.squaredNorm();
    const double nl_alpha = std::sqrt(nl * nl * beta.squaredNorm() + std::max(0.0, g2 - gh2));
    const double den = std::sqrt(g2) + nl_alpha, den_b = g.template lpNorm<1>();
    return std::max(den > 0 ? (gh + nl * beta).norm() / den : 0.0, den_b > 0 ? std::abs(g.sum()) / den_b : 0.0);
  };
  std::vector<Eigen::Index> active, stepping;

  // Steps every fold not done until its residual is at most `stop` (then x = yk, converged) or
  // it has taken max_iter steps (x = its last point).
  auto run = [&](double lambda, double stop, bool in_float) {
    for (;;) {
      active.clear();
      for (Eigen::Index j = 0; j < nf; ++j)
        if (!st[j].done) active.push_back(j);
      if (active.empty()) return;
      const Eigen::Index na = static_cast<Eigen::Index>(active.size());
      for (Eigen::Index a = 0; a < na; ++a) slopes_into(st[active[a]], st[active[a]].yk, gm.col(a).data());
      product(/*trans=*/true, in_float, gm, ghm, na);
      stepping.clear();
      for (Eigen::Index a = 0; a < na; ++a) {
        Fold& fo = st[active[a]];
        const auto g = gm.col(a);
        const auto gh = ghm.col(a);
        const double nl = fo.nd * lambda;
        fo.fit.kkt = kkt_at(nl, g, gh, fo.yk.beta);
        if (fo.fit.kkt <= stop || fo.fit.iterations >= max_iter) {
          fo.fit.converged = fo.fit.kkt <= stop;
          if (fo.fit.converged) {
            fo.x = fo.yk;
            fo.g = g;
            fo.gh = gh;
            fo.have_slopes = true;
          }
          fo.done = true;
          continue;
        }
        const Eigen::ArrayXd d = c * s + nl;
        // db's denominator c n - c^2 w^T (s * m), written as a sum of nonnegative terms (the null
        // directions have s = 0, d = n lambda: each adds c w_k^2).
        const double schur = c * (w_rest + (w.square() * nl / d).sum());
        const Eigen::ArrayXd step = (-gh.array() - nl * fo.yk.beta.array()) / d;
        const double db = -(g.sum() + c * (w * s * step).sum()) / schur;
        const Eigen::Index col = static_cast<Eigen::Index>(stepping.size());
        stepping.push_back(active[a]);
        // `next` is built in yk's place (yk is not needed past this step).
        fo.yk.beta = (fo.yk.beta.array() + step - c * db * w / d).matrix();
        fo.yk.b += db;
        sbm.col(col) = (s * fo.yk.beta.array()).matrix();
      }
      const Eigen::Index ns = static_cast<Eigen::Index>(stepping.size());
      product(/*trans=*/false, in_float, sbm, fnm, ns);
      for (Eigen::Index col = 0; col < ns; ++col) {
        Fold& fo = st[stepping[col]];
        Point next;
        next.beta = std::move(fo.yk.beta);
        next.b = fo.yk.b;
        next.f = fnm.col(col).array() + next.b;
        const double f_next = objective_at(fo, lambda, next);
        if (o.accelerate && f_next <= fo.f_prev) {
          const double t_next = (1 + std::sqrt(1 + 4 * fo.t * fo.t)) / 2, mom = (fo.t - 1) / t_next;
          fo.yk.beta = next.beta + mom * (next.beta - fo.x.beta);
          fo.yk.b = next.b + mom * (next.b - fo.x.b);
          fo.yk.f = next.f + mom * (next.f - fo.x.f);
          fo.t = t_next;
        } else {
          // No momentum, or a restart (the objective rose): the plain MM step from `next`, which
          // never increases the objective.
          fo.yk = next;
          fo.t = 1;
        }
        fo.x = std::move(next);
        fo.f_prev = f_next;
        ++fo.fit.iterations;
      }
    }
  };

  // run(lambda, stop, true) with each step's two products in ONE pass over U's rows
  // (skinny::fused_row_pass): a step's f = U (s beta_next) for a block of rows, the slopes there at
  // the point the next step starts from, then U_blk^T g while the block is in cache. That point is
  // yk = next + mom (next - x) unless the objective at next rose (a restart: yk = next), which is
  // known only after the whole pass; so the pass takes the slopes at the momentum point, and a
  // fold that restarts with mom != 0 takes its slopes at next in the following pass (as a
  // "sloping" column, with no step), then steps on. The iterates are run()'s.
  std::vector<Eigen::Index> sloping;
  auto run_one_pass = [&](double lambda, double stop) {
    for (auto& fo : st) fo.fresh = false;
    for (;;) {
      stepping.clear();
      sloping.clear();
      for (Eigen::Index j = 0; j < nf; ++j) {
        Fold& fo = st[j];
        if (fo.done) continue;
        if (!fo.fresh) {
          sloping.push_back(j);
          continue;
        }
        const double nl = fo.nd * lambda;
        fo.fit.kkt = kkt_at(nl, fo.g, fo.gh, fo.yk.beta);
        if (fo.fit.kkt <= stop || fo.fit.iterations >= max_iter) {
          fo.fit.converged = fo.fit.kkt <= stop;
          if (fo.fit.converged) {
            fo.x = fo.yk;
            fo.have_slopes = true;
          }
          fo.done = true;
          continue;
        }
        // run()'s step, into nx; yk becomes the momentum point (its f is made in the pass).
        const Eigen::ArrayXd d = c * s + nl;
        const double schur = c * (w_rest + (w.square() * nl / d).sum());
        const Eigen::ArrayXd step = (-fo.gh.array() - nl * fo.yk.beta.array()) / d;
        const double db = -(fo.g.sum() + c * (w * s * step).sum()) / schur;
        fo.nx.beta = (fo.yk.beta.array() + step - c * db * w / d).matrix();
        fo.nx.b = fo.yk.b + db;
        fo.t_next = (1 + std::sqrt(1 + 4 * fo.t * fo.t)) / 2;
        fo.mom = o.accelerate ? (fo.t - 1) / fo.t_next : 0.0;
        fo.yk.beta = fo.nx.beta + fo.mom * (fo.nx.beta - fo.x.beta);
        fo.yk.b = fo.nx.b + fo.mom * (fo.nx.b - fo.x.b);
        in_f.col(static_cast<Eigen::Index>(stepping.size())).head(r) = (s * fo.nx.beta.array()).cast<float>().matrix();
        stepping.push_back(j);
      }
      const Eigen::Index ns = static_cast<Eigen::Index>(stepping.size());
      const Eigen::Index nsl = static_cast<Eigen::Index>(sloping.size());
      if (ns + nsl == 0) return;
      // g's columns: the stepping folds' (at their momentum points), then the sloping folds' (at yk).
      auto slopes = [&](std::ptrdiff_t i0, std::ptrdiff_t i1) {
        for (Eigen::Index col = 0; col < ns; ++col) {
          Fold& fo = st[stepping[col]];
          const float* fn = out_f.col(col).data();
          float* gf = g_f.col(col).data();
          for (std::ptrdiff_t i = i0; i < i1; ++i) {
            const double fi = static_cast<double>(fn[i]) + fo.nx.b;
            fo.nx.f[i] = fi;
            const double fy = fi + fo.mom * (fi - fo.x.f[i]);
            fo.yk.f[i] = fy;
            const double gi = fo.in[i] ? y[i] * loss_slope(o.loss, o.delta, y[i] * fy) : 0.0;
            fo.g[i] = gi;
            gf[i] = static_cast<float>(gi);
          }
        }
        for (Eigen::Index col = 0; col < nsl; ++col) {
          Fold& fo = st[sloping[col]];
          float* gf = g_f.col(ns + col).data();
          for (std::ptrdiff_t i = i0; i < i1; ++i) {
            const double gi = fo.in[i] ? y[i] * loss_slope(o.loss, o.delta, y[i] * fo.yk.f[i]) : 0.0;
            fo.g[i] = gi;
            gf[i] = static_cast<float>(gi);
          }
        }
      };
      skinny::fused_row_pass(utf.data(), r, n, utf.rows(), in_f.data(), in_f.rows(), ns, out_f.data(), out_f.rows(),
                             g_f.data(), g_f.rows(), ns + nsl, gh_f.data(), gh_f.rows(), slopes);
      for (Eigen::Index col = 0; col < nsl; ++col) {
        Fold& fo = st[sloping[col]];
        fo.gh = gh_f.col(ns + col).cast<double>();
        fo.fresh = true;
      }
      for (Eigen::Index col = 0; col < ns; ++col) {
        Fold& fo = st[stepping[col]];
        const double f_next = objective_at(fo, lambda, fo.nx);
        if (o.accelerate && f_next <= fo.f_prev) {
          fo.t = fo.t_next;  // yk is the momentum point, its slopes taken in the pass
          fo.fresh = true;
        } else {
          // No momentum, or a restart: the plain MM step from next. The pass's slopes are at next
          // when mom was 0; else they are retaken at next in the following pass.
          fo.yk.beta = fo.nx.beta;
          fo.yk.b = fo.nx.b;
          fo.yk.f = fo.nx.f;
          fo.t = 1;
          fo.fresh = fo.mom == 0;
        }
        if (fo.fresh) fo.gh = gh_f.col(col).cast<double>();
        std::swap(fo.x.beta, fo.nx.beta);
        std::swap(fo.x.f, fo.nx.f);
        fo.x.b = fo.nx.b;
        fo.f_prev = f_next;
        ++fo.fit.iterations;
      }
    }
  };

  std::vector<std::vector<Fit>> out(static_cast<std::size_t>(nf));
  // The one-pass judgement's inputs and outputs (s beta, then beta at full rank; U times them).
  const bool square = r == n;
  Eigen::MatrixXd jb, jf;
  if (one_pass) {
    jb.resize(r, square ? 2 * nf : nf);
    jf.resize(n, jb.cols());
  }
  for (const double lambda : lambdas) {
    bool u_beta_ready = false;
    for (auto& fo : st) {
      if (!warm) fo.x = zero;
      fo.yk = fo.x;
      fo.t = 1;
      fo.f_prev = objective_at(fo, lambda, fo.x);
      fo.done = fo.have_slopes = false;
      fo.fit = Fit{};
      fo.fit.lambda = lambda;
      fo.fit.rank = static_cast<int>(r);
    }
    if (!single) {
      run(lambda, tol, false);
    } else {
      // A margin for the float evaluation's error.
      if (one_pass)
        run_one_pass(lambda, 0.8 * tol);
      else
        run(lambda, 0.8 * tol, true);
      // Every fold's end point in double, all folds at once: f, g, U^T g and the residual.
      if (one_pass) {
        // One pass over U's rows in double; at full rank (r = n) it also takes U beta, which is
        // then alpha (below).
        for (Eigen::Index j = 0; j < nf; ++j) {
          jb.col(j) = (s * st[j].x.beta.array()).matrix();
          if (square) jb.col(nf + j) = st[j].x.beta;
        }
        auto slopes = [&](std::ptrdiff_t i0, std::ptrdiff_t i1) {
          for (Eigen::Index j = 0; j < nf; ++j) {
            Fold& fo = st[j];
            for (std::ptrdiff_t i = i0; i < i1; ++i) {
              const double fi = jf(i, j) + fo.x.b;
              fo.x.f[i] = fi;
              gm(i, j) = fo.in[i] ? y[i] * loss_slope(o.loss, o.delta, y[i] * fi) : 0.0;
            }
          }
        };
        skinny::fused_row_pass(utd.data(), r, n, utd.rows(), jb.data(), jb.rows(), square ? 2 * nf : nf, jf.data(),
                               jf.rows(), gm.data(), gm.rows(), nf, ghm.data(), ghm.rows(), slopes);
      } else {
        for (Eigen::Index j = 0; j < nf; ++j) sbm.col(j) = (s * st[j].x.beta.array()).matrix();
        product(/*trans=*/false, false, sbm, fnm, nf);
        for (Eigen::Index j = 0; j < nf; ++j) {
          st[j].x.f = fnm.col(j).array() + st[j].x.b;
          slopes_into(st[j], st[j].x, gm.col(j).data());
        }
        product(/*trans=*/true, false, gm, ghm, nf);
      }
      bool again = false;
      for (Eigen::Index j = 0; j < nf; ++j) {
        Fold& fo = st[j];
        fo.g = gm.col(j);
        fo.gh = ghm.col(j);
        fo.have_slopes = true;
        fo.fit.kkt = kkt_at(fo.nd * lambda, fo.g, fo.gh, fo.x.beta);
        fo.fit.converged = fo.fit.kkt <= tol;
        if (!fo.fit.converged && fo.fit.iterations < max_iter) {  // go on in double from x
          fo.done = fo.have_slopes = false;
          fo.yk = fo.x;
          fo.t = 1;
          fo.f_prev = objective_at(fo, lambda, fo.x);
          again = true;
        }
      }
      if (again) run(lambda, tol, false);
      u_beta_ready = one_pass && square && !again;
    }
    // alpha = U_r beta + U_null (-U_null^T g / (n lambda)) = U_r (beta + U_r^T g / (n lambda)) -
    // g / (n lambda), as U_null U_null^T = I - U_r U_r^T; one product for all folds. Off the fold's
    // rows it is ~0 (exactly at the minimizer) and not kept.
    // At full rank U_r U_r^T = I, so alpha = U beta: the judging pass took it (u_beta_ready).
    for (Eigen::Index j = 0; j < nf && !u_beta_ready; ++j) {
      Fold& fo = st[j];
      if (!fo.have_slopes) {
        slopes_into(fo, fo.x, fo.g.data());
        if (r > 0) blas::gemv(/*trans=*/true, u_data, n, r, n, fo.g.data(), fo.gh.data());
      }
      sbm.col(j) = fo.x.beta + fo.gh / (fo.nd * lambda);
    }
    if (!u_beta_ready) product(/*trans=*/false, false, sbm, fnm, nf);
    for (Eigen::Index j = 0; j < nf; ++j) {
      Fold& fo = st[j];
      const double nl = fo.nd * lambda;
      const auto& rows = *fo.rows;
      fo.fit.alpha.resize(static_cast<Eigen::Index>(rows.size()));
      for (std::size_t i = 0; i < rows.size(); ++i)
        fo.fit.alpha[static_cast<Eigen::Index>(i)] =
            u_beta_ready ? jf(rows[i], nf + j) : fnm(rows[i], j) - fo.g[rows[i]] / nl;
      fo.fit.b = fo.x.b;
      fo.fit.objective = objective_at(fo, lambda, fo.x);
      out[j].push_back(std::move(fo.fit));
    }
  }
  return out;
}

std::vector<Fit> fit_path_rows(const Spectrum& sp, const Eigen::VectorXd& y, const std::vector<Eigen::Index>& rows,
                               const SolverOptions& o, const std::vector<double>& lambdas, bool warm) {
  return fit_path_folds(sp, y, {rows}, o, lambdas, warm).at(0);
}

std::vector<Fit> fit_path(const Spectrum& sp, const Eigen::VectorXd& y, const SolverOptions& o,
                          const std::vector<double>& lambdas, bool warm) {
  std::vector<Eigen::Index> all(static_cast<std::size_t>(y.size()));
  for (Eigen::Index i = 0; i < y.size(); ++i) all[static_cast<std::size_t>(i)] = i;
  return fit_path_rows(sp, y, all, o, lambdas, warm);
}

}  // namespace kforge::kmodel
