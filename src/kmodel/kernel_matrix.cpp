// The kernel (Gram) matrix and its eigendecomposition, the one factorization a path reuses.
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"

// LAPACK from OpenBLAS (already linked): tridiagonal reduction, MRRR on the tridiagonal matrix
// for a range of eigenvalues, and the back-transformation of those eigenvectors only. The
// trailing lengths are gfortran's hidden CHARACTER arguments.
extern "C" {
void dsytrd_(const char* uplo, const int* n, double* a, const int* lda, double* d, double* e, double* tau,
             double* work, const int* lwork, int* info, std::size_t uplo_len);
void dsterf_(const int* n, double* d, double* e, int* info);
void dstemr_(const char* jobz, const char* range, const int* n, double* d, double* e, const double* vl,
             const double* vu, const int* il, const int* iu, int* m, double* w, double* z, const int* ldz,
             const int* nzc, int* isuppz, int* tryrac, double* work, const int* lwork, int* iwork,
             const int* liwork, int* info, std::size_t jobz_len, std::size_t range_len);
void dormtr_(const char* side, const char* uplo, const char* trans, const int* m, const int* n, const double* a,
             const int* lda, const double* tau, double* c, const int* ldc, double* work, const int* lwork,
             int* info, std::size_t side_len, std::size_t uplo_len, std::size_t trans_len);
}

namespace kforge::kmodel {

KernelFunction::Kind parse_kernel_kind(const std::string& s) {
  if (s == "rbf") return KernelFunction::Kind::rbf;
  if (s == "linear") return KernelFunction::Kind::linear;
  if (s == "poly") return KernelFunction::Kind::poly;
  throw UsageError("--kernel " + s + ": unknown kernel; use rbf, linear or poly");
}

const char* kernel_kind_name(KernelFunction::Kind k) {
  return k == KernelFunction::Kind::rbf ? "rbf" : k == KernelFunction::Kind::linear ? "linear" : "poly";
}

double gamma_scale(const Eigen::MatrixXd& x) {
  const double mean = x.mean();
  const double var = (x.array() - mean).square().mean();
  return var > 0 ? 1.0 / (static_cast<double>(x.cols()) * var) : 1.0;
}

Eigen::MatrixXd gram(const KernelFunction& k, const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  if (a.cols() != b.cols())
    throw UsageError(fmt::format("gram: {} features against {}", a.cols(), b.cols()));
  Eigen::MatrixXd g = a * b.transpose();  // (rows of a, rows of b)
  if (k.kind == KernelFunction::Kind::linear) return g;
  if (k.kind == KernelFunction::Kind::poly) {
    // An integer power by repeated multiplication: exact for the degrees people use, and
    // std::pow of a negative base with an integer-valued double exponent is fine too but slower.
    g = (k.gamma * g.array() + k.coef0).matrix();
    const Eigen::ArrayXXd base = g.array();
    for (int d = 1; d < k.degree; ++d) g.array() *= base;
    return g;
  }
  const Eigen::VectorXd na = a.rowwise().squaredNorm(), nb = b.rowwise().squaredNorm();
  for (Eigen::Index j = 0; j < g.cols(); ++j)
    for (Eigen::Index i = 0; i < g.rows(); ++i)
      g(i, j) = std::exp(-k.gamma * std::max(0.0, na[i] + nb[j] - 2 * g(i, j)));
  return g;
}

EigenSolver parse_eigensolver(const std::string& s) {
  if (s == "auto") return EigenSolver::automatic;
  if (s == "lapack") return EigenSolver::lapack;
  if (s == "eigen") return EigenSolver::eigen;
  throw UsageError("--eigensolver " + s + ": use auto (pivoted Cholesky when K is low rank, else lapack), lapack "
                    "(OpenBLAS: dsytrd, dstemr, dormtr) or eigen (Eigen's solver)");
}

namespace {

// The eigenpairs of K with eigenvalue above rank_tol * the largest, by LAPACK: dsytrd reduces K
// to tridiagonal T = Q^T K Q (the O(n^3) part), dsterf gives T's eigenvalues (O(n^2)), which
// count the pairs to keep; dstemr finds those eigenvectors of T by MRRR (the top r by index when
// r is a small share, else all, which is faster there), dormtr applies Q to the kept ones only
// (O(n^2) per pair).
Spectrum lapack_eigenpairs(const Eigen::MatrixXd& k, double rank_tol) {
  const int n = static_cast<int>(k.rows());
  Eigen::MatrixXd a = k;
  Eigen::VectorXd d(n), e(n), tau(std::max(1, n - 1));
  int info = 0, lwork = -1;
  double query = 0;
  dsytrd_("L", &n, a.data(), &n, d.data(), e.data(), tau.data(), &query, &lwork, &info, 1);
  std::vector<double> work(static_cast<std::size_t>(std::max(1.0, query)));
  lwork = static_cast<int>(work.size());
  dsytrd_("L", &n, a.data(), &n, d.data(), e.data(), tau.data(), work.data(), &lwork, &info, 1);
  if (info != 0) throw std::runtime_error(fmt::format("LAPACK dsytrd failed (info {})", info));

  Eigen::VectorXd values = d, off = e;  // dsterf overwrites its input
  dsterf_(&n, values.data(), off.data(), &info);
  if (info != 0) throw std::runtime_error(fmt::format("LAPACK dsterf failed (info {})", info));
  const double s_max = n > 0 ? values.maxCoeff() : 0;
  int r = 0;
  for (int i = 0; i < n; ++i) r += rank_tol <= 0 || values[i] > rank_tol * s_max;

  Spectrum sp;
  sp.s.resize(n);
  sp.u.resize(n, n);
  const bool all = 3 * r > n;
  const double vl = 0, vu = 0;
  const int il = n - r + 1, iu = n, nzc = n;
  int m = 0, tryrac = 1, liwork = -1, iquery = 0;
  std::vector<int> isuppz(2 * static_cast<std::size_t>(std::max(1, n)));
  if (r == 0) return Spectrum{Eigen::MatrixXd(n, 0), Eigen::VectorXd(0)};
  lwork = -1;
  dstemr_("V", all ? "A" : "I", &n, d.data(), e.data(), &vl, &vu, &il, &iu, &m, sp.s.data(), sp.u.data(), &n,
          &nzc, isuppz.data(), &tryrac, &query, &lwork, &iquery, &liwork, &info, 1, 1);
  work.assign(static_cast<std::size_t>(std::max(1.0, query)), 0);
  std::vector<int> iwork(static_cast<std::size_t>(std::max(1, iquery)));
  lwork = static_cast<int>(work.size());
  liwork = static_cast<int>(iwork.size());
  dstemr_("V", all ? "A" : "I", &n, d.data(), e.data(), &vl, &vu, &il, &iu, &m, sp.s.data(), sp.u.data(), &n,
          &nzc, isuppz.data(), &tryrac, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  if (info != 0) throw std::runtime_error(fmt::format("LAPACK dstemr failed (info {})", info));
  if (all && r < m) {  // keep the top r (eigenvalues ascend)
    sp.s.head(r) = sp.s.segment(m - r, r).eval();
    sp.u.leftCols(r) = sp.u.middleCols(m - r, r).eval();
    m = r;
  }
  sp.s.conservativeResize(m);
  sp.u.conservativeResize(n, m);
  if (m == 0) return sp;

  lwork = -1;
  dormtr_("L", "L", "N", &n, &m, a.data(), &n, tau.data(), sp.u.data(), &n, &query, &lwork, &info, 1, 1, 1);
  work.assign(static_cast<std::size_t>(std::max(1.0, query)), 0);
  lwork = static_cast<int>(work.size());
  dormtr_("L", "L", "N", &n, &m, a.data(), &n, tau.data(), sp.u.data(), &n, work.data(), &lwork, &info, 1, 1, 1);
  if (info != 0) throw std::runtime_error(fmt::format("LAPACK dormtr failed (info {})", info));
  return sp;
}

}  // namespace

Spectrum decompose(const Eigen::MatrixXd& k, EigenSolver how, double rank_tol) {
  Spectrum sp;
  if (how == EigenSolver::eigen) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(k);
    if (es.info() != Eigen::Success) throw std::runtime_error("the kernel matrix's eigendecomposition failed");
    sp.u = es.eigenvectors();
    sp.s = es.eigenvalues();
  } else if (how == EigenSolver::lapack || !low_rank_eigenpairs(k, rank_tol, k.rows() / 4, sp)) {
    sp = lapack_eigenpairs(k, rank_tol);  // only the eigenpairs fit_path will use
  }
  // A kernel matrix is positive semidefinite; rounding leaves eigenvalues like -1e-13. The
  // model uses K = U diag(max(s, 0)) U^T, which keeps the majorizer's diagonal positive.
  sp.s = sp.s.cwiseMax(0.0);
  return sp;
}

}  // namespace kforge::kmodel
