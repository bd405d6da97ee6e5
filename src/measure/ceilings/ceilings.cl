// Micro-benchmarks for an OpenCL device's ceilings (the ABI of ceilings.cpp; `reps` is
// ignored: one element per work-item, 64 for read, and the host repeats launches instead).
// peak_*: 12 independent float16 (double8) FMA chains per work-item, written out one by one (a
// loop over a private array is not always unrolled, and then each FMA goes through memory);
// out[gid] keeps the result alive, out[global size] reports the operations per iteration per
// work-item. read / write / copy / triad: STREAM's kernels.
#define CHAINS 12
#define KF_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#define KF_INIT(c) V acc##c = m * (S)(c + 1 + get_global_id(0) % 3);
#define KF_FMA(c) acc##c = fma(acc##c, m, a);
#define KF_SUM(c) s += acc##c;

#define V float16
#define S float
__kernel void peak_fp32(__global float* out, int iters) {
  const V m = (V)(0.9999999f), a = (V)(1e-7f);
  KF_CHAINS(KF_INIT)
  for (int i = 0; i < iters; ++i) {
    KF_CHAINS(KF_FMA)
  }
  V s = (V)(0.0f);
  KF_CHAINS(KF_SUM)
  const float8 h = s.lo + s.hi;
  const float4 q = h.lo + h.hi;
  out[get_global_id(0)] = q.x + q.y + q.z + q.w;
  if (get_global_id(0) == 0) out[get_global_size(0)] = 2.0f * CHAINS * 16;
}
#undef V
#undef S

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define V double8
#define S double
__kernel void peak_fp64(__global float* out, int iters) {
  const V m = (V)(0.9999999), a = (V)(1e-7);
  KF_CHAINS(KF_INIT)
  for (int i = 0; i < iters; ++i) {
    KF_CHAINS(KF_FMA)
  }
  V s = (V)(0.0);
  KF_CHAINS(KF_SUM)
  const double4 h = s.lo + s.hi;
  out[get_global_id(0)] = (float)(h.x + h.y + h.z + h.w);
  if (get_global_id(0) == 0) out[get_global_size(0)] = 2.0f * CHAINS * 8;
}
#undef V
#undef S
#endif

// 64 floats per work-item (the host launches n / 64), summed; one float written per 64 read.
__kernel void read(__global const float* a, __global float* out, int n, int reps) {
  const int i = get_global_id(0);
  if (64 * i + 63 >= n) return;
  const float16 s = vload16(4 * i, a) + vload16(4 * i + 1, a) + vload16(4 * i + 2, a) +
                    vload16(4 * i + 3, a);
  const float8 h = s.lo + s.hi;
  const float4 q = h.lo + h.hi;
  out[i] = q.x + q.y + q.z + q.w;
}

__kernel void write(__global float* a, int n, float s, int reps) {
  const int i = get_global_id(0);
  if (i < n) a[i] = s;
}

__kernel void copy(__global float* a, __global const float* b, int n, int reps) {
  const int i = get_global_id(0);
  if (i < n) a[i] = b[i];
}

__kernel void triad(__global float* a, __global const float* b, __global const float* c, int n,
                    float s, int reps) {
  const int i = get_global_id(0);
  if (i < n) a[i] = b[i] + s * c[i];
}
