// Micro-benchmarks for a CUDA device's ceilings (the ABI of ceilings.cpp; `reps` is ignored:
// one element per thread, the host repeats launches instead). peak_*: 12 independent scalar
// (or paired) FMA chains per thread, or dp4a chains for int8 (a GPU's lanes are its threads;
// tensor cores are not measured); out[gid] keeps the result alive, out[total threads] reports
// the operations per iteration per thread. read / write / copy / triad: STREAM's kernels.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define CHAINS 12

template <class F>
__device__ __forceinline__ void peak_body(float* out, int iters) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  const F m = F(0.9999999), a = F(1e-7);
  F acc[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) acc[c] = m * F(c + 1 + gid % 3);
#pragma unroll 4
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = fma(acc[c], m, a);
  F s = acc[0];
#pragma unroll
  for (int c = 1; c < CHAINS; ++c) s += acc[c];
  out[gid] = float(s);
  if (gid == 0) out[gridDim.x * blockDim.x] = 2.0f * CHAINS;
}

extern "C" __global__ void peak_fp32(float* out, int iters) { peak_body<float>(out, iters); }

extern "C" __global__ void peak_fp64(float* out, int iters) { peak_body<double>(out, iters); }

// Paired half-precision FMAs (HFMA2): 2 lanes, 4 FLOPs per instruction.
template <class P>
__device__ __forceinline__ void peak_pair_body(float* out, int iters, P m, P a) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  P acc[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) acc[c] = a;
#pragma unroll 4
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = __hfma2(acc[c], m, a);
  float s = 0;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += float(acc[c].x) + float(acc[c].y);
  out[gid] = s;
  if (gid == 0) out[gridDim.x * blockDim.x] = 4.0f * CHAINS;
}

extern "C" __global__ void peak_fp16(float* out, int iters) {
  peak_pair_body<__half2>(out, iters, __float2half2_rn(0.999f), __float2half2_rn(1e-3f));
}

extern "C" __global__ void peak_bf16(float* out, int iters) {
  peak_pair_body<__nv_bfloat162>(out, iters, __float2bfloat162_rn(0.999f),
                                 __float2bfloat162_rn(1e-3f));
}

// dp4a: 4 int8 products summed into an int32, 8 operations.
extern "C" __global__ void peak_int8(float* out, int iters) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  const int x = 0x03030303 + int(gid & 1), y = 0x02fe02fe;
  int acc[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) acc[c] = c;
#pragma unroll 4
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = __dp4a(x, y, acc[c]);
  int s = 0;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += acc[c];
  out[gid] = float(s);
  if (gid == 0) out[gridDim.x * blockDim.x] = 8.0f * CHAINS;
}

extern "C" __global__ void read(const float* a, float* out, int n, int reps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && a[i] == -1.2345f) out[0] = a[i];  // never true; the load cannot be dropped
}

extern "C" __global__ void write(float* a, int n, float s, int reps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = s;
}

extern "C" __global__ void copy(float* a, const float* b, int n, int reps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i];
}

extern "C" __global__ void triad(float* a, const float* b, const float* c, int n, float s,
                                 int reps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
