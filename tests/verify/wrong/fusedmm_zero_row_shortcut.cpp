// WRONG on purpose: a fusedmm with a shortcut for a row of X that is all zeros: "every sampled
// dot product is 0, so the row's output is 0". True without the op (op 0), false with the
// sigmoid (op 1), where each sampled value is sigmoid(0) = 1/2 and the row is half the sum of
// its neighbours' rows of Z. Drawn element by element no row of X is all zero, so random trials
// pass it.
// Caught by: `structured` (the zero_rows pattern zeroes every third row of X, on trial 0's
//   scalars: op 1; the element check inside is `bound`). Quick mode (random inputs only) passes it.
//   build/kforge eval --problem fusedmm --lang cpp --grid M \
//     --source tests/verify/wrong/fusedmm_zero_row_shortcut.cpp \
//     --size M=67,K=59,D=32,N=17,NNZ=600 --thorough --json
// Otherwise right: one block per row, the sampled values and the row's sum in double.
#include <cmath>
#include <vector>

static void body(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* X, const float* Y,
                 const float* Z, float* out, int M, int K, int D, int N, int NNZ, float pattern, float op) {
  (void)M, (void)K, (void)NNZ, (void)pattern;
  const int r = (int)ctx.block_idx.x;
  const float* x = X + (long long)r * D;
  bool zero_row = true;
  for (int d = 0; d < D; ++d) zero_row = zero_row && x[d] == 0.0f;
  if (zero_row) {  // BUG: sigmoid(0) = 1/2, not 0
    for (int j = 0; j < N; ++j) out[(long long)r * N + j] = 0.0f;
    return;
  }
  std::vector<double> acc(N, 0.0);
  for (int p = (int)row_ptr[r]; p < (int)row_ptr[r + 1]; ++p) {
    const int c = (int)col_idx[p];
    double s = 0;
    for (int d = 0; d < D; ++d) s += (double)x[d] * Y[(long long)c * D + d];
    const double w = op == 1.0f ? 1 / (1 + std::exp(-s)) : s;
    for (int j = 0; j < N; ++j) acc[j] += w * Z[(long long)c * N + j];
  }
  for (int j = 0; j < N; ++j) out[(long long)r * N + j] = (float)acc[j];
}
KF_KERNEL(fusedmm, body)
