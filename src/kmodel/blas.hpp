#pragma once
// OpenBLAS for the products that dominate the kernel models (kforge builds without -march, so
// Eigen's own kernels are SSE2; OpenBLAS picks AVX2/AVX-512 at run time). Column-major views:
// `a` points at an (m, n) block with leading dimension lda.
#include <cblas.h>

#include <Eigen/Dense>

namespace kforge::kmodel::blas {

// y = A x (trans false) or y = A^T x (trans true).
inline void gemv(bool trans, const double* a, Eigen::Index m, Eigen::Index n, Eigen::Index lda, const double* x,
                 double* y) {
  cblas_dgemv(CblasColMajor, trans ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              1.0, a, static_cast<blasint>(lda), x, 1, 0.0, y, 1);
}

// C = A^T? B for whole column-major matrices.
inline Eigen::MatrixXd gemm(const Eigen::MatrixXd& a, bool trans_a, const Eigen::MatrixXd& b) {
  const Eigen::Index m = trans_a ? a.cols() : a.rows(), k = trans_a ? a.rows() : a.cols();
  Eigen::MatrixXd c(m, b.cols());
  cblas_dgemm(CblasColMajor, trans_a ? CblasTrans : CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(b.cols()), static_cast<blasint>(k), 1.0, a.data(), static_cast<blasint>(a.rows()),
              b.data(), static_cast<blasint>(b.rows()), 0.0, c.data(), static_cast<blasint>(m));
  return c;
}

}  // namespace kforge::kmodel::blas
