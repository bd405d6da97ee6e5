// The kernel (Gram) matrix and its eigendecomposition, the one factorization a path reuses.
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"

// LAPACK's symmetric eigensolver (divide and conquer), from OpenBLAS (already linked); the
// trailing lengths are gfortran's hidden CHARACTER arguments.
extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info,
                        std::size_t jobz_len, std::size_t uplo_len);

namespace kforge::kmodel {

KernelFunction::Kind parse_kernel_kind(const std::string& s) {
  if (s == "rbf") return KernelFunction::Kind::rbf;
  if (s == "linear") return KernelFunction::Kind::linear;
  throw UsageError("--kernel " + s + ": unknown kernel; use rbf or linear");
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
  const Eigen::VectorXd na = a.rowwise().squaredNorm(), nb = b.rowwise().squaredNorm();
  for (Eigen::Index j = 0; j < g.cols(); ++j)
    for (Eigen::Index i = 0; i < g.rows(); ++i)
      g(i, j) = std::exp(-k.gamma * std::max(0.0, na[i] + nb[j] - 2 * g(i, j)));
  return g;
}

EigenSolver parse_eigensolver(const std::string& s) {
  if (s == "lapack") return EigenSolver::lapack;
  if (s == "eigen") return EigenSolver::eigen;
  throw UsageError("--eigensolver " + s + ": use lapack (OpenBLAS dsyevd) or eigen (Eigen's solver)");
}

Spectrum decompose(const Eigen::MatrixXd& k, EigenSolver how) {
  Spectrum sp;
  if (how == EigenSolver::eigen) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(k);
    if (es.info() != Eigen::Success) throw std::runtime_error("the kernel matrix's eigendecomposition failed");
    sp.u = es.eigenvectors();
    sp.s = es.eigenvalues();
  } else {
    const int n = static_cast<int>(k.rows());
    sp.u = k;
    sp.s.resize(n);
    int info = 0, lwork = -1, liwork = -1, iwork_query = 0;
    double work_query = 0;
    dsyevd_("V", "L", &n, sp.u.data(), &n, sp.s.data(), &work_query, &lwork, &iwork_query, &liwork, &info, 1, 1);
    lwork = static_cast<int>(work_query);
    liwork = iwork_query;
    std::vector<double> work(static_cast<std::size_t>(std::max(1, lwork)));
    std::vector<int> iwork(static_cast<std::size_t>(std::max(1, liwork)));
    dsyevd_("V", "L", &n, sp.u.data(), &n, sp.s.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
    if (info != 0) throw std::runtime_error(fmt::format("LAPACK dsyevd failed (info {})", info));
  }
  // A kernel matrix is positive semidefinite; rounding leaves eigenvalues like -1e-13. The
  // model uses K = U diag(max(s, 0)) U^T, which keeps the majorizer's diagonal positive.
  sp.s = sp.s.cwiseMax(0.0);
  return sp;
}

}  // namespace kforge::kmodel
