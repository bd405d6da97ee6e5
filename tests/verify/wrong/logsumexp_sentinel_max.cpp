// WRONG on purpose: lazy_reduce.logsumexp (OUT[i] = log sum_j exp(-|x_i - y_j|^2 / s)) with its
// running max started at -1e30 instead of -infinity (a "very negative" sentinel, common in
// hand-written softmax code). Where every f_ij = -|x_i - y_j|^2 / s lies below -1e30, the max
// never moves, every exp(f - max) underflows to 0 and the result is log 0 = -inf. The drawn
// points (at most 2^20 in magnitude, s >= 0.001) keep every f above -1e17, so random trials
// pass it.
// Caught by: `structured` (near_overflow scales the points to about 1e16, so f is about -1e35;
//   the element check inside is `finite`). Quick mode (random inputs only) passes it.
//   build/kforge eval --problem lazy_reduce.logsumexp --lang cpp --grid N \
//     --source tests/verify/wrong/logsumexp_sentinel_max.cpp --size N=53,M=67,D=3 --thorough --json
// Otherwise right: one block per point x_i, the max shift and the sum in double.
#include <cmath>

static void body(const kf_ctx& ctx, const float* X, const float* Y, float* OUT, int N, int M, int D, float s) {
  (void)N;
  const int i = (int)ctx.block_idx.x;
  double mx = -1e30, sum = 0;  // BUG: -1e30 is not below every f
  for (int j = 0; j < M; ++j) {
    double d2 = 0;
    for (int d = 0; d < D; ++d) {
      const double t = (double)X[(long long)i * D + d] - Y[(long long)j * D + d];
      d2 += t * t;
    }
    const double f = -d2 / s;
    if (f > mx) sum *= std::exp(mx - f), mx = f;
    sum += std::exp(f - mx);
  }
  OUT[i] = (float)(mx + std::log(sum));
}
KF_KERNEL(lazy_reduce_logsumexp, body)
