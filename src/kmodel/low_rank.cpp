// The top eigenpairs of a numerically low-rank kernel matrix in O(n r^2), without the O(n^3)
// tridiagonal reduction: a pivoted (partial) Cholesky factor K ~ L L^T, then L = Q R (QR) and the
// small eigenproblem R R^T = V diag(s) V^T, so K ~ (Q V) diag(s) (Q V)^T with Q V orthonormal to
// machine precision (forming L V s^-1/2 instead would lose orthogonality like eps s_max / s_k).
//
// Stopping: the error E = K - L L^T is positive semidefinite (diagonal pivoting: the residual is
// the Schur complement), so |E|_2 <= trace(E), the sum of the residual diagonal. The factor
// stops once trace(E) <= rank_tol * s_lo, s_lo = max(1^T K 1 / n, max_i K_ii) <= s_max: the same
// or a stricter cut than lapack's "eigenvalues below rank_tol * s_max are 0". Each column costs a
// kernel column and an (n, j) gemv: O(n r^2) in all; when K is not low rank (r would pass
// max_rank) it gives up, having spent O(n max_rank^2), and the caller runs LAPACK.
#include <algorithm>
#include <cmath>

#include "kforge/kmodel.hpp"
#include "kmodel/blas.hpp"

namespace kforge::kmodel {

bool low_rank_eigenpairs(const Eigen::MatrixXd& k, double rank_tol, Eigen::Index max_rank, Spectrum& out) {
  const Eigen::Index n = k.rows();
  if (n == 0 || rank_tol <= 0) return false;
  max_rank = std::min(max_rank, n);
  Eigen::VectorXd d = k.diagonal();
  const double s_lo = std::max(k.sum() / static_cast<double>(n), d.maxCoeff());
  if (!(s_lo > 0) || !std::isfinite(s_lo)) return false;
  const double stop = rank_tol * s_lo;
  Eigen::MatrixXd l(n, max_rank);
  std::vector<char> pivoted(static_cast<std::size_t>(n), 0);
  Eigen::VectorXd row(max_rank);
  Eigen::Index r = 0;
  for (;; ++r) {
    double left = 0;  // trace(E): the residual diagonal over the rows not yet pivoted
    Eigen::Index p = -1;
    for (Eigen::Index i = 0; i < n; ++i) {
      if (pivoted[static_cast<std::size_t>(i)]) continue;
      const double di = std::max(0.0, d[i]);
      left += di;
      if (p < 0 || di > d[p]) p = i;
    }
    if (left <= stop || p < 0) break;
    if (r == max_rank) return false;
    // column r: (K[:, p] - L[:, :r] L[p, :r]^T) / sqrt(d_p)
    double* col = l.col(r).data();
    std::copy(k.col(p).data(), k.col(p).data() + n, col);
    if (r > 0) {
      for (Eigen::Index j = 0; j < r; ++j) row[j] = l(p, j);
      cblas_dgemv(CblasColMajor, CblasNoTrans, static_cast<blasint>(n), static_cast<blasint>(r), -1.0, l.data(),
                  static_cast<blasint>(n), row.data(), 1, 1.0, col, 1);
    }
    const double piv = std::sqrt(d[p]);
    for (Eigen::Index i = 0; i < n; ++i) {
      col[i] = pivoted[static_cast<std::size_t>(i)] ? 0.0 : col[i] / piv;  // exact zeros above the pivot
      d[i] -= col[i] * col[i];
    }
    col[p] = piv;
    d[p] = 0;
    pivoted[static_cast<std::size_t>(p)] = 1;
  }
  if (r == 0) {
    out = Spectrum{Eigen::MatrixXd(n, 0), Eigen::VectorXd(0)};
    return true;
  }
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(l.leftCols(r));
  const Eigen::MatrixXd rr = qr.matrixQR().topRows(r).triangularView<Eigen::Upper>();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(rr * rr.transpose());
  if (es.info() != Eigen::Success) return false;
  const Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(n, r);
  out.u = blas::gemm(q, false, es.eigenvectors());  // ascending, as LAPACK's
  out.s = es.eigenvalues();
  return true;
}

}  // namespace kforge::kmodel
