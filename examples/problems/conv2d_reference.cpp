// The reference of examples.conv2d in double: cross-correlation with x read as zero outside its
// image, and the magnitude (the same sums over absolute values).
#include <cmath>
#include <cstdint>

void conv2d_reference(const double* x, const double* w, double* y, double* y_magnitude, int64_t N,
                      int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
                      int64_t stride, int64_t pad, int64_t dil) {
  const int64_t P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int64_t Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  for (int64_t e = 0; e < N * K * P * Q; ++e) y[e] = y_magnitude[e] = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      double* yo = y + (n * K + k) * P * Q;
      double* mo = y_magnitude + (n * K + k) * P * Q;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t s = 0; s < S; ++s) {
            const double wv = w[((k * C + c) * R + r) * S + s];
            for (int64_t p = 0; p < P; ++p) {
              const int64_t h = p * stride - pad + r * dil;
              if (h < 0 || h >= H) continue;
              for (int64_t q = 0; q < Q; ++q) {
                const int64_t v = q * stride - pad + s * dil;
                if (v < 0 || v >= W) continue;
                yo[p * Q + q] += x[((n * C + c) * H + h) * W + v] * wv;
                mo[p * Q + q] += std::fabs(x[((n * C + c) * H + h) * W + v]) * std::fabs(wv);
              }
            }
          }
    }
}
