// spmspv for the opencl backend: y = A x, A in CSC, x sparse (ascending indices), y dense + mask.
//
// One work-item per RPT consecutive output rows: for each of x's entries in order it finds,
// by binary search in column x_idx[q]'s ascending row indices, the first entry at or past its
// first row and adds A[r, j] * x_val[q] for the entries inside its rows, in private sums; then
// it writes its rows of y and y_mask once. No atomics, one writer per element, each y[r]
// summed in x's order. A work-item costs XNNZ binary searches, so RPT trades parallelism for
// fewer searches.
//
// Parameters (#defines): WG work-items per group, RPT rows per work-item.
__kernel void spmspv(__global const int* col_ptr, __global const int* row_idx, __global const float* values,
                     __global const int* x_idx, __global const float* x_val, __global float* y,
                     __global float* y_mask, int M, int K, int NNZ, int XNNZ, float pattern) {
  const int r0 = get_global_id(0) * RPT;
  if (r0 >= M) return;
  const int r1 = min(M, r0 + RPT);
  float acc[RPT], hit[RPT];
  for (int k = 0; k < RPT; ++k) acc[k] = 0.0f, hit[k] = 0.0f;
  for (int q = 0; q < XNNZ; ++q) {
    const int j = x_idx[q];
    const float xv = x_val[q];
    int lo = col_ptr[j], top = col_ptr[j + 1];
    const int hi = top;
    while (lo < top) {
      const int mid = (lo + top) / 2;
      if (row_idx[mid] < r0) lo = mid + 1;
      else top = mid;
    }
    for (int p = lo; p < hi && row_idx[p] < r1; ++p) {
      const int k = row_idx[p] - r0;
      acc[k] += values[p] * xv;
      hit[k] = 1.0f;
    }
  }
  for (int k = 0; k < r1 - r0; ++k) {
    y[r0 + k] = acc[k];
    y_mask[r0 + k] = hit[k];
  }
}
