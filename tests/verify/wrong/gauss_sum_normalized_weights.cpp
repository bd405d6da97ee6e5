// WRONG on purpose: lazy_reduce.gauss_sum (OUT[i,:] = sum_j exp(-|x_i - y_j|^2 / s) B[j,:])
// computed with its weights normalized (a range guard, the form a kernel-regression code already
// has): OUT[i,e] = W_e * sum_j f_ij (B[j,e] / W_e), W_e = sum_j |B[j,e]|. Where a column of
// weights is all zero, 0/0 = NaN in every row. Drawn weights are never all zero in a column of
// M = 67, so random trials pass it.
// Caught by: `structured` (zero_columns zeroes B's first column, negative_zero every weight: W_e
//   = 0; the element check inside is `finite`). Quick mode (random inputs only) passes it.
//   build/kforge eval --problem lazy_reduce.gauss_sum --lang cpp --grid N \
//     --source tests/verify/wrong/gauss_sum_normalized_weights.cpp \
//     --size N=53,M=67,D=3,E=2 --thorough --json
// Otherwise right: one block per point x_i, the sum over j in double.
#include <cmath>

static void body(const kf_ctx& ctx, const float* X, const float* Y, const float* B, float* OUT, int N, int M, int D,
                 int E, float s) {
  (void)N;
  const int i = (int)ctx.block_idx.x;
  for (int e = 0; e < E; ++e) {
    double w = 0;
    for (int j = 0; j < M; ++j) w += std::fabs(B[(long long)j * E + e]);
    double acc = 0;
    for (int j = 0; j < M; ++j) {
      double d2 = 0;
      for (int d = 0; d < D; ++d) {
        const double t = (double)X[(long long)i * D + d] - Y[(long long)j * D + d];
        d2 += t * t;
      }
      acc += std::exp(-d2 / s) * (B[(long long)j * E + e] / w);  // BUG: w may be 0
    }
    OUT[(long long)i * E + e] = (float)(acc * w);
  }
}
KF_KERNEL(lazy_reduce_gauss_sum, body)
