// sum, max and argmax along either axis for the cuda backend, X (M,N) row-major, any M, N.
// Six kernels, <op>_axis1 (each row, Y (M)) and <op>_axis0 (each column, Y (N)).
// axis 1: one block per row; its THREADS threads stride the row (coalesced), then combine by
// warp shuffles and across warps through shared memory. axis 0: one thread per column walking
// down the rows; neighbouring threads read neighbouring columns (coalesced).
// argmax keeps the first maximum: ties go to the smaller index, as numpy's argmax.
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define WARPS (THREADS / 32)
enum Op { kSum, kMax, kArgmax };

template <int O>
__device__ __forceinline__ void combine(float& v, int& at, float w, int wat) {
  if (O == kSum) v += w;
  else if (w > v || (w == v && wat < at)) v = w, at = wat;
}

template <int O>
__device__ __forceinline__ void reduce_row(const T* __restrict__ X, T* __restrict__ Y, int N) {
  __shared__ float sv[WARPS];
  __shared__ int sat[WARPS];
  const int tid = threadIdx.x;
  const T* x = X + (long long)blockIdx.x * N;
  float v = O == kSum ? 0.0f : KF_NEG_INF;
  int at = 0x7fffffff;
  for (int j = tid; j < N; j += THREADS) combine<O>(v, at, kf_to_f32(x[j]), j);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    combine<O>(v, at, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, at, o));
  if (tid % 32 == 0) sv[tid / 32] = v, sat[tid / 32] = at;
  __syncthreads();
  if (tid == 0) {
    for (int w = 1; w < WARPS; ++w) combine<O>(v, at, sv[w], sat[w]);
    Y[blockIdx.x] = kf_from_f32(O == kArgmax ? (float)at : v);
  }
}

template <int O>
__device__ __forceinline__ void reduce_col(const T* __restrict__ X, T* __restrict__ Y, int M, int N) {
  const int col = blockIdx.x * THREADS + threadIdx.x;
  if (col >= N) return;
  float v = O == kSum ? 0.0f : KF_NEG_INF;
  int at = 0x7fffffff;
  for (int i = 0; i < M; ++i) combine<O>(v, at, kf_to_f32(X[(long long)i * N + col]), i);
  Y[col] = kf_from_f32(O == kArgmax ? (float)at : v);
}

#define KF_REDUCE(op, O)                                                                     \
  extern "C" __global__ void __launch_bounds__(THREADS) op##_axis1(const T* X, T* Y, int M, int N) { \
    reduce_row<O>(X, Y, N);                                                                  \
  }                                                                                          \
  extern "C" __global__ void __launch_bounds__(THREADS) op##_axis0(const T* X, T* Y, int M, int N) { \
    reduce_col<O>(X, Y, M, N);                                                               \
  }

KF_REDUCE(sum, kSum)
KF_REDUCE(max, kMax)
KF_REDUCE(argmax, kArgmax)
