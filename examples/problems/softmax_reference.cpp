// The reference of examples.softmax in double, and the hook that conditions its inputs.
#include <algorithm>
#include <cmath>
#include <cstdint>

// Every fourth row shifted by +1000 and the one two further by -1000: exp(1000) overflows
// fp32 and exp(-1000) underflows, so a kernel that skips the max subtraction fails.
void shift_rows(double* X, int64_t M, int64_t N, unsigned long long /*seed*/, int /*trial*/) {
  for (int64_t i = 0; i < M; ++i) {
    const double shift = i % 4 == 1 ? 1000 : i % 4 == 3 ? -1000 : 0;
    for (int64_t j = 0; j < N; ++j) X[i * N + j] += shift;
  }
}

// The magnitude makes gamma_N * magnitude a first-order bound on a correct fp32 kernel's error:
// exp's relative error follows the error of x - max, and the sum adds the weighted errors of its
// terms; 16 more roundings cover exp's own error (up to 3 ulp), 1/sum and the final product.
void softmax_reference(const double* X, double* Y, double* Y_magnitude, int64_t M, int64_t N) {
  const double extra_roundings = 16, n = static_cast<double>(N);
  for (int64_t i = 0; i < M; ++i) {
    const double* x = X + i * N;
    double* y = Y + i * N;
    const double mx = *std::max_element(x, x + N);
    double sum = 0, spread = 0;
    for (int64_t j = 0; j < N; ++j) sum += y[j] = std::exp(x[j] - mx);
    for (int64_t j = 0; j < N; ++j) {
      y[j] /= sum;
      spread += y[j] * (mx - x[j]);
    }
    for (int64_t j = 0; j < N; ++j)
      Y_magnitude[i * N + j] = y[j] * (1 + ((mx - x[j]) + spread + extra_roundings) / n);
  }
}
