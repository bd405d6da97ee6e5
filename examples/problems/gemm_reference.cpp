// The reference of examples.gemm, in double: C = alpha*A*B + beta*C, and its magnitude, the same
// sums over absolute values, which bounds the rounding error of any summation order.
#include <cmath>
#include <cstdint>
#include <vector>

void gemm_reference(const double* A, const double* B, double* C, double* C_magnitude, int64_t M,
                    int64_t N, int64_t K, double alpha, double beta) {
  std::vector<double> sum(N), mag(N);
  for (int64_t i = 0; i < M; ++i) {
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(mag.begin(), mag.end(), 0.0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) {
        sum[j] += A[i * K + k] * B[k * N + j];
        mag[j] += std::fabs(A[i * K + k]) * std::fabs(B[k * N + j]);
      }
    for (int64_t j = 0; j < N; ++j) {
      const double c_in = beta != 0.0 ? beta * C[i * N + j] : 0.0;  // beta = 0: C is not read
      C_magnitude[i * N + j] = std::fabs(alpha) * mag[j] + std::fabs(c_in);
      C[i * N + j] = alpha * sum[j] + c_in;
    }
  }
}
