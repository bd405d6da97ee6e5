// Micro-benchmarks for an OpenCL device's ceilings. peak: 12 independent float16 (double8) FMA
// chains per work-item, written out one by one (a loop over a private array is not always
// unrolled, and then each FMA goes through memory); out[gid] keeps the result alive,
// out[global size] reports the lanes per chain. triad: STREAM's a = b + s*c.
#define CHAINS 12  // the host counts 2 * CHAINS * lanes FLOPs per iteration
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
  if (get_global_id(0) == 0) out[get_global_size(0)] = 16.0f;
}
#undef V
#undef S

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define V double8
#define S double
__kernel void peak_fp64(__global double* out, int iters) {
  const V m = (V)(0.9999999), a = (V)(1e-7);
  KF_CHAINS(KF_INIT)
  for (int i = 0; i < iters; ++i) {
    KF_CHAINS(KF_FMA)
  }
  V s = (V)(0.0);
  KF_CHAINS(KF_SUM)
  const double4 h = s.lo + s.hi;
  out[get_global_id(0)] = h.x + h.y + h.z + h.w;
  if (get_global_id(0) == 0) out[get_global_size(0)] = 8.0;
}
#undef V
#undef S
#endif

__kernel void triad(__global float* a, __global const float* b, __global const float* c, int n,
                    float s) {
  const int i = get_global_id(0);
  if (i < n) a[i] = b[i] + s * c[i];
}
