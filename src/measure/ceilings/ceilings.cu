// Micro-benchmarks for a CUDA device's ceilings (the ABI of ceilings.cl). peak: 12 independent
// scalar FMA chains per thread (a GPU's lanes are its threads); out[gid] keeps the result
// alive, out[total threads] reports the lanes per chain (1). triad: STREAM's a = b + s*c.
#define CHAINS 12

template <class F>
__device__ __forceinline__ void peak_body(F* out, int iters) {
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
  out[gid] = s;
  if (gid == 0) out[gridDim.x * blockDim.x] = F(1);
}

extern "C" __global__ void peak_fp32(float* out, int iters) { peak_body<float>(out, iters); }

extern "C" __global__ void peak_fp64(double* out, int iters) { peak_body<double>(out, iters); }

extern "C" __global__ void triad(float* a, const float* b, const float* c, int n, float s) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
