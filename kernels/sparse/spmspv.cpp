// spmspv for the cpu backend: y = A x, A in CSC, x sparse (ascending indices), y dense + mask.
//
// Grid: RBLOCKS blocks of consecutive output rows, equal in count. Block b zeroes its rows of y
// and y_mask, then walks x's entries in order: for column j = x_idx[q] it finds the first
// entry at or past its first row by binary search in the column's ascending row indices and
// scatters A[r, j] * x_val[q] into its rows until the column leaves them. Only the columns x
// selects are read; each y[r] sums its terms in x's order (deterministic), with one writer.
// A block costs its rows plus XNNZ binary searches, so RBLOCKS stays near the thread count.
//
// Parameters (#defines): RBLOCKS row blocks.
static void spmspv_block(const kf_ctx& ctx, const int* col_ptr, const int* row_idx, const float* values,
                         const int* x_idx, const float* x_val, float* y, float* y_mask, int M, int K, int NNZ,
                         int XNNZ, float pattern) {
  (void)K, (void)NNZ, (void)pattern;
  const long long nb = ctx.grid_dim.x, b = ctx.block_idx.x;
  const int r0 = (int)(M * b / nb), r1 = (int)(M * (b + 1) / nb);
  for (int r = r0; r < r1; ++r) y[r] = 0.0f, y_mask[r] = 0.0f;
  for (int q = 0; q < XNNZ; ++q) {
    const int j = x_idx[q];
    const float xv = x_val[q];
    int lo = col_ptr[j];
    const int hi = col_ptr[j + 1];
    if (lo < hi && row_idx[lo] < r0) {  // the first entry at or past r0
      int top = hi;
      while (lo < top) {
        const int mid = (lo + top) / 2;
        if (row_idx[mid] < r0) lo = mid + 1;
        else top = mid;
      }
    }
    for (int p = lo; p < hi && row_idx[p] < r1; ++p) {
      const int r = row_idx[p];
      y[r] += values[p] * xv;
      y_mask[r] = 1.0f;
    }
  }
}

KF_KERNEL(spmspv, spmspv_block)
