// softmax for the cuda backend: Y = exp(X - rowmax) / rowsum, row-major (M,N), any M, N >= 1.
// One block per row; its THREADS threads stride the row (coalesced), looping as long as the
// row is. Pass 1 finds the max, pass 2 the sum of exp(x - max), each combined across a warp by
// shuffles and across the warps through shared memory; pass 3 writes exp(x - max) / sum. (Not
// the one-pass online softmax: its repeated rescaling of the running sum adds an exp rounding
// per new maximum, which the error bound does not allow for; rows up to L2's size are re-read
// from L2.)
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32, at most 1024)
//   UNROLL   unroll factor of the strided loops (loads in flight per thread)
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define WARPS (THREADS / 32)

// The block's max (op 0) or sum (op 1) of one value per thread, in every thread; combined in
// the same order in every thread.
__device__ __forceinline__ float block_reduce(float v, int op, float* shared) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = op == 0 ? fmaxf(v, w) : v + w;
  }
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < WARPS; ++w) v = op == 0 ? fmaxf(v, shared[w]) : v + shared[w];
  __syncthreads();  // shared is reused by the next reduction
  return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax(const T* __restrict__ X, T* __restrict__ Y, int M, int N) {
  __shared__ float partial[WARPS];
  const int tid = threadIdx.x;
  const T* x = X + (long long)blockIdx.x * N;
  T* y = Y + (long long)blockIdx.x * N;

  float m = KF_NEG_INF;
KF_UNROLL(UNROLL)
  for (int j = tid; j < N; j += THREADS) m = fmaxf(m, kf_to_f32(x[j]));
  m = block_reduce(m, 0, partial);

  float s = 0.0f;
KF_UNROLL(UNROLL)
  for (int j = tid; j < N; j += THREADS) s += expf(kf_to_f32(x[j]) - m);
  const float inv = 1.0f / block_reduce(s, 1, partial);

KF_UNROLL(UNROLL)
  for (int j = tid; j < N; j += THREADS) y[j] = kf_from_f32(expf(kf_to_f32(x[j]) - m) * inv);
}
