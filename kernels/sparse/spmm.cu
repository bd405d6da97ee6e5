// spmm for the cuda backend: C = A * B with A in CSR. The scheme of spmm.cl (read it for the
// why): block (WX, WY) owns WY rows and a strip of WX * CPT columns; thread (x, y) sums row
// r's nonzeros for columns n0 + x + k * WX in registers, coalesced loads of B's rows.
//
// Parameters (#defines): WX threads along columns, CPT columns per thread, WY rows per block.
extern "C" __global__ void __launch_bounds__(WX * WY)
spmm(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
     const float* __restrict__ values, const float* __restrict__ B, float* __restrict__ C, int M,
     int K, int N, int NNZ, float pattern) {
  const int r = blockIdx.y * WY + threadIdx.y;
  if (r >= M) return;
  const int n0 = blockIdx.x * (WX * CPT) + threadIdx.x;
  float acc[CPT];
#pragma unroll
  for (int k = 0; k < CPT; ++k) acc[k] = 0.0f;
  const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
  for (int p = p0; p < p1; ++p) {
    const float a = __ldg(values + p);
    const float* b = B + (long long)__ldg(col_idx + p) * N;
#pragma unroll
    for (int k = 0; k < CPT; ++k) {
      const int j = n0 + k * WX;
      if (j < N) acc[k] = fmaf(a, __ldg(b + j), acc[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < CPT; ++k) {
    const int j = n0 + k * WX;
    if (j < N) C[(long long)r * N + j] = acc[k];
  }
}
