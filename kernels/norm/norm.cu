// rmsnorm and layernorm for the cuda backend (two kernels, one body), row-major (M,N):
//   rmsnorm:   Y = X / sqrt(mean(X^2) + eps) * gamma
//   layernorm: Y = (X - mean) / sqrt(var + eps) * gamma + beta
// One block per row; its THREADS threads stride the row (coalesced), looping as long as the
// row is. layernorm is two-pass (the mean, then the sum of squared deviations from it: stable
// where E[x^2] - E[x]^2 cancels); each sum is combined across a warp by shuffles and across
// the warps through shared memory. The last pass writes the output; rows up to L2's size are
// re-read from L2.
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32, at most 1024)
//   UNROLL   unroll factor of the strided loops (loads in flight per thread)
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define WARPS (THREADS / 32)

// The block's sum of one value per thread, in every thread, in the same order in each.
__device__ __forceinline__ float block_sum(float v, float* shared) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < WARPS; ++w) v += shared[w];
  __syncthreads();  // shared is reused by the next reduction
  return v;
}

template <bool kCentered>
__device__ __forceinline__ void norm_row(const T* __restrict__ X, const T* __restrict__ G,
                                         const T* __restrict__ B, T* __restrict__ Y, int N,
                                         float eps) {
  __shared__ float partial[WARPS];
  const int tid = threadIdx.x;
  const T* x = X + (long long)blockIdx.x * N;
  T* y = Y + (long long)blockIdx.x * N;

  float mean = 0.0f;
  if (kCentered) {
    float s = 0.0f;
KF_UNROLL(UNROLL)
    for (int j = tid; j < N; j += THREADS) s += kf_to_f32(x[j]);
    mean = block_sum(s, partial) / N;
  }
  float s2 = 0.0f;
KF_UNROLL(UNROLL)
  for (int j = tid; j < N; j += THREADS) {
    const float d = kf_to_f32(x[j]) - mean;
    s2 = fmaf(d, d, s2);
  }
  const float inv = 1.0f / sqrtf(block_sum(s2, partial) / N + eps);

KF_UNROLL(UNROLL)
  for (int j = tid; j < N; j += THREADS) {
    float v = (kf_to_f32(x[j]) - mean) * inv * kf_to_f32(G[j]);
    if (kCentered) v += kf_to_f32(B[j]);
    y[j] = kf_from_f32(v);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
rmsnorm(const T* X, const T* G, T* Y, int M, int N, float eps) {
  norm_row<false>(X, G, G, Y, N, eps);
}

extern "C" __global__ void __launch_bounds__(THREADS)
layernorm(const T* X, const T* G, const T* B, T* Y, int M, int N, float eps) {
  norm_row<true>(X, G, B, Y, N, eps);
}
