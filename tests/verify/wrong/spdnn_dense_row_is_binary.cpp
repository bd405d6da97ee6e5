// WRONG on purpose: a sparse DNN with a fast path for a fully active input row: the challenge's
// inputs are binary, so a row whose every feature is nonzero is taken to be all ones and its first
// layer becomes the precomputed b_j + sum_t w_jt (no gather). The generator's only fully active row
// is row 0, which is all ones on every trial (the other rows are at most half dense), and the
// perturbation check moves one element of another row, so random trials pass it.
// Caught by: `structured` (all_equal makes every row a dense row of 0.75s; alternating_signs and
//   near_overflow reshape row 0; the element check inside is `bound`). Quick mode passes it.
//   build/kforge eval --problem spdnn --lang cpp --grid B \
//     --source tests/verify/wrong/spdnn_dense_row_is_binary.cpp \
//     --size B=23,N=37,K=5,L=3 --thorough --json
// Otherwise right: one block per input row, every layer in double, ReLU and the clip at 32.
#include <vector>

static void body(const kf_ctx& ctx, const float* Y0, const int* W_idx, const float* W_val, const float* bias,
                 float* Y, float* cat, int B, int N, int K, int L) {
  (void)B;
  const int r = (int)ctx.block_idx.x;
  std::vector<float> y(Y0 + (long long)r * N, Y0 + (long long)(r + 1) * N), next(N);
  bool dense = true;
  for (int i = 0; i < N; ++i) dense = dense && y[i] != 0.0f;
  if (dense)  // BUG: a fully active row need not be all ones
    for (int i = 0; i < N; ++i) y[i] = 1.0f;
  for (int l = 0; l < L; ++l) {
    for (int j = 0; j < N; ++j) {
      double z = bias[(long long)l * N + j];
      for (int t = 0; t < K; ++t) {
        const long long e = ((long long)l * N + j) * K + t;
        z += (double)y[(int)W_idx[e]] * W_val[e];
      }
      next[j] = (float)(z < 0 ? 0 : z > 32 ? 32 : z);
    }
    y.swap(next);
  }
  bool any = false;
  for (int j = 0; j < N; ++j) Y[(long long)r * N + j] = y[j], any = any || y[j] > 0.0f;
  cat[r] = any ? 1.0f : 0.0f;
}
KF_KERNEL(spdnn, body)
