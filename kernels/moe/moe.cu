// moe_grouped_gemm for the cuda backend: dispatch, grouped GEMM and combine in ONE launch.
// The same schedule as moe.cl (read it for the why): each block owns the output strip
// Y[t0:t0+TCHUNK, n0:n0+BN], so the combine needs no atomics on Y; it walks the experts in
// order, gathers expert e's (token, slot) pairs of its chunk into a shared list (a scan of the
// ids with a shared counter), then runs the tiles (e, row block of BM rows, this column
// block) with A gathered from X and W[e] staged in shared memory, and adds gate * tile to Y.
//
// Parameters (all #defines):
//   BM, BN   the tile (gathered rows, columns)     KT  reduction slice in shared memory
//   WX, WY   threads along columns and rows        TCHUNK  tokens per block
#define RM (BM / WY)
#define RN (BN / WX)
#define NT (WX * WY)

extern "C" __global__ void __launch_bounds__(NT)
moe_grouped_gemm(const float* __restrict__ X, const float* __restrict__ ids,
                 const float* __restrict__ gate, const float* __restrict__ W, float* Y, int T,
                 int H, int F, int E, int K) {
  __shared__ int list[2 * TCHUNK];  // K <= 2
  __shared__ int count;
  __shared__ float As[KT][BM];
  __shared__ float Bs[KT][BN];
  const int lx = threadIdx.x, ly = threadIdx.y, lid = ly * WX + lx;
  const int n0 = blockIdx.x * BN, t0 = blockIdx.y * TCHUNK;
  const int tc = min(TCHUNK, T - t0), nc = min(BN, F - n0);

  for (int i = lid; i < tc * nc; i += NT) Y[(long long)(t0 + i / nc) * F + n0 + i % nc] = 0.0f;
  __syncthreads();

  for (int e = 0; e < E; ++e) {
    if (lid == 0) count = 0;
    __syncthreads();
    for (int i = lid; i < tc * K; i += NT)
      if ((int)ids[t0 * K + i] == e) list[atomicAdd(&count, 1)] = t0 * K + i;
    __syncthreads();
    const int n = count;
    const float* We = W + (long long)e * H * F;
    for (int r0 = 0; r0 < n; r0 += BM) {
      float acc[RM][RN];
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) acc[i][j] = 0.0f;
      for (int k0 = 0; k0 < H; k0 += KT) {
        for (int i = lid; i < BM * KT; i += NT) {  // dispatch: gather KT columns of BM rows
          const int r = i / KT, k = i % KT;
          As[k][r] = r0 + r < n && k0 + k < H ? X[(long long)(list[r0 + r] / K) * H + k0 + k] : 0.0f;
        }
        for (int i = lid; i < KT * BN; i += NT) {
          const int k = i / BN, j = i % BN;
          Bs[k][j] = k0 + k < H && j < nc ? We[(long long)(k0 + k) * F + n0 + j] : 0.0f;
        }
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < KT; ++k) {
          float a[RM], b[RN];
#pragma unroll
          for (int i = 0; i < RM; ++i) a[i] = As[k][ly + i * WY];
#pragma unroll
          for (int j = 0; j < RN; ++j) b[j] = Bs[k][lx + j * WX];
#pragma unroll
          for (int i = 0; i < RM; ++i)
#pragma unroll
            for (int j = 0; j < RN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
      }
#pragma unroll
      for (int i = 0; i < RM; ++i) {  // combine: a token is at most once in an expert's list
        const int r = r0 + ly + i * WY;
        if (r >= n) continue;
        const int p = list[r];
        const float g = gate[p];
        float* y = Y + (long long)(p / K) * F + n0;
#pragma unroll
        for (int j = 0; j < RN; ++j)
          if (lx + j * WX < nc) y[lx + j * WX] += g * acc[i][j];
      }
      __syncthreads();  // the next tile may add to the same elements (block-visible writes)
    }
    __syncthreads();  // the list is rebuilt for the next expert
  }
}
