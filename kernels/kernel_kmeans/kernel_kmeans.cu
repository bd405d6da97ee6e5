// kernel_kmeans for the cuda backend: one Lloyd step of kernel k-means, never an N x N
// buffer; scalar kind 0: RBF exp(-gamma d2), 1: polynomial (gamma <x_i, x_j> + coef0)^degree.
// Pass 1: one thread per row i; the block stages TJ points (coordinates up to KM_SHARED_D, and
// their labels) in shared memory at a time, each thread adds k(x_i, x_j) to its cluster's sum
// (KMAX sums per thread), writes its row of S into DIST and k(x_i, x_i) into NEWL_i (pass 2
// reads it there before writing the label). Pass 2: the block
// that finishes last (atomicAdd on SYNC after a __threadfence, the threadFenceReduction
// pattern) computes the cluster sizes and terms z_c in shared memory, then DIST and NEWL for
// every row (see kernel_kmeans.cpp's header), and resets SYNC to zero.
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)   TJ  points per shared tile
//   KMAX     the most clusters
#ifndef TJ
#define TJ 128
#endif
#define KM_SHARED_D 8
#define KM_FLT_MAX 3.402823466e+38f

typedef kf_storage T;  // fp32

// b^p by p - 1 products (p = degree, 1..8).
__device__ __forceinline__ float km_pow(float b, int p) {
  float k = b;
  for (int e = 1; e < p; ++e) k *= b;
  return k;
}

__device__ __forceinline__ int km_label(const T* L, long long j, int K) {
  const int c = (int)L[j];
  return c < 0 ? 0 : c >= K ? K - 1 : c;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    kernel_kmeans(const T* __restrict__ X, const T* __restrict__ L, T* DIST, T* NEWL, T* SYNC, int N, int D, int K,
                  float gamma, float kind, float degree, float coef0) {
  const bool poly = kind != 0.0f;
  const int p = (int)degree;
  __shared__ float ys[KM_SHARED_D * TJ];  // (D, TJ): the tile, transposed
  __shared__ int ls[TJ];
  __shared__ float n[KMAX], z[KMAX];
  __shared__ bool last;
  const int i = blockIdx.x * THREADS + threadIdx.x;
  const bool row = i < N;
  const T* x = X + (long long)(row ? i : 0) * D;
  const bool staged = D <= KM_SHARED_D;
  float acc[KMAX];
  for (int c = 0; c < K; ++c) acc[c] = 0.0f;
  for (int j0 = 0; j0 < N; j0 += TJ) {
    const int nj = min(TJ, N - j0);
    __syncthreads();
    if (staged)
      for (int k = threadIdx.x; k < nj * D; k += THREADS) ys[(k % D) * TJ + k / D] = X[(long long)j0 * D + k];
    for (int k = threadIdx.x; k < nj; k += THREADS) ls[k] = km_label(L, j0 + k, K);
    __syncthreads();
    if (!row) continue;
    for (int j = 0; j < nj; ++j) {
      float d2 = 0.0f;  // RBF: the squared distance; polynomial: the dot product
      for (int d = 0; d < D; ++d) {
        const float yv = staged ? ys[d * TJ + j] : X[(long long)(j0 + j) * D + d];
        d2 += poly ? x[d] * yv : (x[d] - yv) * (x[d] - yv);
      }
      acc[ls[j]] += poly ? km_pow(d2 * gamma + coef0, p) : expf(d2 * -gamma);
    }
  }
  if (row) {
    for (int c = 0; c < K; ++c) DIST[(long long)i * K + c] = acc[c];
    float s = 0.0f;
    for (int d = 0; d < D; ++d) s += x[d] * x[d];
    NEWL[i] = poly ? km_pow(s * gamma + coef0, p) : 1.0f;  // k(x_i, x_i)
  }
  __threadfence();  // this block's rows visible before it is counted
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd((unsigned*)SYNC, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int c = threadIdx.x; c < K; c += THREADS) {
    float nc = 0.0f, s = 0.0f;
    for (int r = 0; r < N; ++r)
      if (km_label(L, r, K) == c) nc += 1.0f, s += DIST[(long long)r * K + c];
    n[c] = nc, z[c] = nc > 0.0f ? s / nc / nc : 0.0f;
  }
  __syncthreads();
  for (int r = threadIdx.x; r < N; r += THREADS) {
    T* out = DIST + (long long)r * K;
    int best = 0;
    for (int c = 0; c < K; ++c) {
      out[c] = n[c] > 0.0f ? NEWL[r] - 2.0f * (out[c] / n[c]) + z[c] : KM_FLT_MAX;
      if (out[c] < out[best]) best = c;  // strict: a tie keeps the lowest cluster
    }
    NEWL[r] = (float)best;
  }
  if (threadIdx.x == 0) atomicExch((unsigned*)SYNC, 0u);  // zero for the next launch
}
