// WRONG on purpose: an spmspv with an "empty vector" shortcut: when every stored value of x is
// zero it writes y = 0 and y_mask = 0 and returns, as if x held no entries. But x's stored
// entries are structural: y_mask must still mark every row that one of x's columns meets (a
// structural entry whose value is 0 is still an entry). The generator always gives x a nonzero
// value at A's first nonempty column (and the random trials' explicit zero is one entry among
// others), so random trials pass it.
// Caught by: `structured` (the negative_zero pattern makes every value of A and x -0.0, which
//   compares equal to 0; the element check inside is `all_zero`
//   or `bound`: y_mask is 0 where it must be 1).
//   Quick mode (random inputs only) passes it.
//   build/kforge eval --problem spmspv --lang cpp --grid 1 \
//     --source tests/verify/wrong/spmspv_all_zero_x_shortcut.cpp \
//     --size M=97,K=83,NNZ=900,XNNZ=7 --thorough --json
// Otherwise right: one block walks x's columns and scatters A[r, j] * x[j] into y, in double.
#include <vector>

static void body(const kf_ctx& ctx, const int* col_ptr, const int* row_idx, const float* values,
                 const int* x_idx, const float* x_val, float* y, float* y_mask, int M, int K, int NNZ, int XNNZ,
                 float pattern) {
  (void)ctx, (void)K, (void)NNZ, (void)pattern;
  bool all_zero = true;
  for (int q = 0; q < XNNZ; ++q) all_zero = all_zero && x_val[q] == 0.0f;
  if (all_zero) {  // BUG: x's entries are structural even when their values are 0
    for (int r = 0; r < M; ++r) y[r] = 0.0f, y_mask[r] = 0.0f;
    return;
  }
  std::vector<double> acc(M, 0.0);
  std::vector<char> hit(M, 0);
  for (int q = 0; q < XNNZ; ++q) {
    const int j = (int)x_idx[q];
    for (int p = (int)col_ptr[j]; p < (int)col_ptr[j + 1]; ++p) {
      const int r = (int)row_idx[p];
      acc[r] += (double)values[p] * x_val[q];
      hit[r] = 1;
    }
  }
  for (int r = 0; r < M; ++r) y[r] = (float)acc[r], y_mask[r] = hit[r] ? 1.0f : 0.0f;
}
KF_KERNEL(spmspv, body)
