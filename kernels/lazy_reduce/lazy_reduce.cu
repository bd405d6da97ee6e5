// Lazy reductions for the cuda backend: f(x_i, y_j) reduced over j, never an N x M buffer.
// The formula arrives as #defines in front of this template (see lazy_reduce.cpp's header for
// their meaning). One thread per row i; the block's THREADS threads stage TJ points of Y at a
// time in shared memory (up to D <= LZ_SHARED_D coordinates; larger D reads Y from global),
// then each thread evaluates its row against the tile with its reduction state in registers.
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)     TJ  points per shared tile
#ifndef LZ_REDUCE
#define LZ_REDUCE 0
#define LZ_NTERMS 1
#define LZ_TERM0 0
#define LZ_TERM1 0
#define LZ_F(t0, t1) (expf((-(t0)) / s))
#define LZ_SCALAR_PARAMS , float s
#endif
#ifndef TJ
#define TJ 128
#endif
#define LZ_SHARED_D 8
#define LZ_INF (-KF_NEG_INF)

typedef kf_storage T;  // fp32

__device__ __forceinline__ float lz_term(int kind, const T* x, const float* y, int D, int stride) {
  float t = 0.0f;
  for (int d = 0; d < D; ++d) {
    const float yv = y[d * stride];
    t += kind == 0 ? (x[d] - yv) * (x[d] - yv) : x[d] * yv;
  }
  return t;
}

#if LZ_REDUCE == 0
#define LZ_ARGS const T* __restrict__ X, const T* __restrict__ Y, const T* __restrict__ B, T* OUT, int N, int M, int D, int E
#elif LZ_REDUCE == 4
#define LZ_ARGS const T* __restrict__ X, const T* __restrict__ Y, T* DIST, T* IDX, int N, int M, int D, int K
#else
#define LZ_ARGS const T* __restrict__ X, const T* __restrict__ Y, T* OUT, int N, int M, int D
#endif

extern "C" __global__ void __launch_bounds__(THREADS) lazy_reduce(LZ_ARGS LZ_SCALAR_PARAMS) {
  __shared__ float ys[LZ_SHARED_D * TJ];  // (D, TJ): the tile, transposed
  const int i = blockIdx.x * THREADS + threadIdx.x;
  const bool row = i < N;
  const T* x = X + (long long)(row ? i : 0) * D;
  const bool staged = D <= LZ_SHARED_D;
#if LZ_REDUCE == 0
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // E <= 4 in registers; larger E loops over j again
  for (int e0 = 0; e0 < E; e0 += 4) {
    if (e0 > 0) acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
#else
  float mx = KF_NEG_INF, sm = 0.0f, best = LZ_INF;
  int at = 0;
#if LZ_REDUCE == 4
  float kd[64];
  int ki[64];
  for (int k = 0; k < K; ++k) kd[k] = LZ_INF, ki[k] = -1;
#endif
#endif
  for (int j0 = 0; j0 < M; j0 += TJ) {
    const int nj = min(TJ, M - j0);
    if (staged) {
      __syncthreads();
      for (int k = threadIdx.x; k < nj * D; k += THREADS) ys[(k % D) * TJ + k / D] = Y[(long long)j0 * D + k];
      __syncthreads();
    }
    if (!row) continue;
    for (int j = 0; j < nj; ++j) {
      const float* y = staged ? ys + j : Y + (long long)(j0 + j) * D;
      const int stride = staged ? TJ : 1;
      const float t0 = lz_term(LZ_TERM0, x, y, D, stride);
      const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, x, y, D, stride) : 0.0f;
      const float f = LZ_F(t0, t1);
#if LZ_REDUCE == 0
      for (int e = 0; e < 4 && e0 + e < E; ++e) acc[e] += f * B[(long long)(j0 + j) * E + e0 + e];
#elif LZ_REDUCE == 1
      if (f > mx) sm = sm * expf(mx - f), mx = f;  // the running max: rescale the sum to it
      if (mx > KF_NEG_INF) sm += expf(f - mx);
#elif LZ_REDUCE == 2 || LZ_REDUCE == 3
      if (f < best) best = f, at = j0 + j;  // strict: a tie keeps the first index
#else
      if (f < kd[K - 1]) {
        int p = K - 1;
        while (p > 0 && kd[p - 1] > f) kd[p] = kd[p - 1], ki[p] = ki[p - 1], --p;
        kd[p] = f, ki[p] = j0 + j;
      }
#endif
    }
  }
#if LZ_REDUCE == 0
    if (row)  // threads past N stay for the next weight columns' __syncthreads
      for (int e = 0; e < 4 && e0 + e < E; ++e) OUT[(long long)i * E + e0 + e] = acc[e];
  }
#else
  if (!row) return;
#endif
#if LZ_REDUCE == 0
#elif LZ_REDUCE == 1
  OUT[i] = mx + logf(sm);
#elif LZ_REDUCE == 2
  OUT[i] = best;
#elif LZ_REDUCE == 3
  OUT[i] = (float)at;
#else
  for (int k = 0; k < K; ++k) DIST[(long long)i * K + k] = kd[k], IDX[(long long)i * K + k] = (float)ki[k];
#endif
}
