// WRONG on purpose: lazy_reduce.knn (the K smallest |x_i - y_j|^2 in ascending order and their
// j) computed on distances divided by the row's largest one (a range guard before a selection
// in single precision), scaled back when stored. Where every point y_j equals x_i, the largest
// distance is 0 and every stored distance is 0/0 * 0 = NaN. Drawn points never make a row of
// M = 67 distances all zero (integer points tie, but not all at distance 0), so random trials
// pass it.
// Caught by: `structured` (all_equal makes every coordinate 0.75, so every distance is 0; the
//   element check inside is `finite`). Quick mode (random inputs only) passes it.
//   build/kforge eval --problem lazy_reduce.knn --lang cpp --grid N \
//     --source tests/verify/wrong/knn_scaled_by_farthest.cpp --size N=53,M=67,D=3,K=5 --thorough --json
// Otherwise right: one block per point x_i, distances in double, an insertion list of K that
// keeps the first index of a tie.
#include <cmath>
#include <vector>

static void body(const kf_ctx& ctx, const float* X, const float* Y, float* DIST, float* IDX, int N, int M, int D,
                 int K) {
  (void)N;
  const int i = (int)ctx.block_idx.x;
  std::vector<double> d2(M);
  double far = 0;
  for (int j = 0; j < M; ++j) {
    double a = 0;
    for (int d = 0; d < D; ++d) {
      const double t = (double)X[(long long)i * D + d] - Y[(long long)j * D + d];
      a += t * t;
    }
    d2[j] = a, far = far > a ? far : a;
  }
  std::vector<double> kd(K, INFINITY);
  std::vector<int> ki(K, -1);
  for (int j = 0; j < M; ++j) {
    const double v = d2[j] / far;  // BUG: far may be 0
    if (!(v < kd[K - 1]) && ki[K - 1] >= 0) continue;
    int p = K - 1;
    while (p > 0 && (ki[p - 1] < 0 || kd[p - 1] > v)) kd[p] = kd[p - 1], ki[p] = ki[p - 1], --p;
    kd[p] = v, ki[p] = j;
  }
  for (int k = 0; k < K; ++k)
    DIST[(long long)i * K + k] = (float)(kd[k] * far), IDX[(long long)i * K + k] = (float)ki[k];
}
KF_KERNEL(lazy_reduce_knn, body)
