// fusedmm for the cuda backend: out[r, :] = Σ_{p in row r} op(X[r, :] · Y[c_p, :]) · Z[c_p, :].
// The scheme of fusedmm.cl (read it for the why): a block of WX threads per row, the row's
// nonzeros in chunks of WX, thread i's dot product into shared memory, then each thread's
// columns j = x + k * WX updated over the chunk in order (coalesced rows of Z, registers).
//
// Parameters (#defines): WX threads per row (the chunk length), CPT columns per thread per pass.
extern "C" __global__ void __launch_bounds__(WX)
fusedmm(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ X,
        const float* __restrict__ Y, const float* __restrict__ Z, float* __restrict__ out, int M, int K, int D,
        int N, int NNZ, float pattern, float op) {
  __shared__ float w[WX];
  __shared__ int col[WX];
  const int r = blockIdx.x, lx = threadIdx.x;
  const int p0 = __ldg(row_ptr + r), p1 = __ldg(row_ptr + r + 1);
  const float* x = X + (long long)r * D;
  float* o = out + (long long)r * N;
  if (p0 == p1) {
    for (int j = lx; j < N; j += WX) o[j] = 0.0f;
    return;
  }
  for (int q = p0; q < p1; q += WX) {
    const int n = min(WX, p1 - q);
    if (lx < n) {
      const int c = __ldg(col_idx + q + lx);
      const float* y = Y + (long long)c * D;
      float s = 0.0f;
      for (int d = 0; d < D; ++d) s = fmaf(__ldg(x + d), __ldg(y + d), s);
      w[lx] = op == 1.0f ? 1.0f / (1.0f + expf(-s)) : s;
      col[lx] = c;
    }
    __syncthreads();
    for (int j0 = lx; j0 < N; j0 += WX * CPT) {
      float acc[CPT];
#pragma unroll
      for (int k = 0; k < CPT; ++k) {
        const int j = j0 + k * WX;
        acc[k] = q == p0 || j >= N ? 0.0f : o[j];
      }
      for (int i = 0; i < n; ++i) {
        const float a = w[i];
        const float* z = Z + (long long)col[i] * N;
#pragma unroll
        for (int k = 0; k < CPT; ++k) {
          const int j = j0 + k * WX;
          if (j < N) acc[k] = fmaf(a, __ldg(z + j), acc[k]);
        }
      }
#pragma unroll
      for (int k = 0; k < CPT; ++k) {
        const int j = j0 + k * WX;
        if (j < N) o[j] = acc[k];
      }
    }
    __syncthreads();
  }
}
