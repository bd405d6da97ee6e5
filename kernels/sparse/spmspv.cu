// spmspv for the cuda backend: y = A x, A in CSC, x sparse (ascending indices), y dense + mask.
// The scheme of spmspv.cl (read it for the why): a thread per RPT consecutive output rows, a
// binary search per entry of x into that column's ascending row indices, private sums, one
// write per element, each y[r] summed in x's order.
//
// Parameters (#defines): WG threads per block, RPT rows per thread.
extern "C" __global__ void __launch_bounds__(WG)
spmspv(const int* __restrict__ col_ptr, const int* __restrict__ row_idx, const float* __restrict__ values,
       const int* __restrict__ x_idx, const float* __restrict__ x_val, float* __restrict__ y,
       float* __restrict__ y_mask, int M, int K, int NNZ, int XNNZ, float pattern) {
  const int r0 = (blockIdx.x * WG + threadIdx.x) * RPT;
  if (r0 >= M) return;
  const int r1 = min(M, r0 + RPT);
  float acc[RPT], hit[RPT];
#pragma unroll
  for (int k = 0; k < RPT; ++k) acc[k] = 0.0f, hit[k] = 0.0f;
  for (int q = 0; q < XNNZ; ++q) {
    const int j = __ldg(x_idx + q);
    const float xv = __ldg(x_val + q);
    int lo = __ldg(col_ptr + j), top = __ldg(col_ptr + j + 1);
    const int hi = top;
    while (lo < top) {
      const int mid = (lo + top) / 2;
      if (__ldg(row_idx + mid) < r0) lo = mid + 1;
      else top = mid;
    }
    for (int p = lo; p < hi && __ldg(row_idx + p) < r1; ++p) {
      const int k = __ldg(row_idx + p) - r0;
      acc[k] = fmaf(__ldg(values + p), xv, acc[k]);
      hit[k] = 1.0f;
    }
  }
  for (int k = 0; k < r1 - r0; ++k) {
    y[r0 + k] = acc[k];
    y_mask[r0 + k] = hit[k];
  }
}
