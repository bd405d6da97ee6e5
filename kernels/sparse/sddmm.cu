// sddmm for the cuda backend: out[p] = A[r, :] . B[col_idx[p], :] for each nonzero p of row r.
// One warp per nonzero: the 32 lanes split the dot product over D (coalesced rows of A and B),
// then a shuffle reduction; WPB warps per block. The row of nonzero p is found by binary search
// on row_ptr. Entries past row_ptr[M] get 0.
//
// Parameters (#defines): WPB warps per block.
extern "C" __global__ void __launch_bounds__(32 * WPB)
sddmm(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
      const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ out, int M,
      int K, int D, int NNZ, float pattern) {
  const int p = blockIdx.x * WPB + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (p >= NNZ) return;
  if (p >= row_ptr[M]) {
    if (lane == 0) out[p] = 0.0f;
    return;
  }
  int lo = 0, hi = M - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (row_ptr[mid] <= p) lo = mid;
    else hi = mid - 1;
  }
  const float* a = A + (long long)lo * D;
  const float* b = B + (long long)col_idx[p] * D;
  float s = 0.0f;
  for (int d = lane; d < D; d += 32) s = fmaf(__ldg(a + d), __ldg(b + d), s);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) out[p] = s;
}
