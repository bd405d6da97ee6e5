// Micro-benchmarks for an OpenCL device's ceilings. peak: 12 independent float8 (double4) FMA
// chains per work-item; out[gid] keeps the result alive, out[global size] reports the lanes
// per chain. triad: STREAM's a = b + s*c.
#define CHAINS 12

__kernel void peak_fp32(__global float* out, int iters) {
  float8 acc[CHAINS];
  const float8 m = (float8)(0.9999999f), a = (float8)(1e-7f);
  for (int c = 0; c < CHAINS; ++c) acc[c] = m * (float)(c + 1 + get_global_id(0) % 3);
  for (int i = 0; i < iters; ++i)
    for (int c = 0; c < CHAINS; ++c) acc[c] = fma(acc[c], m, a);
  float8 s = acc[0];
  for (int c = 1; c < CHAINS; ++c) s += acc[c];
  out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7;
  if (get_global_id(0) == 0) out[get_global_size(0)] = 8.0f;
}

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void peak_fp64(__global double* out, int iters) {
  double4 acc[CHAINS];
  const double4 m = (double4)(0.9999999), a = (double4)(1e-7);
  for (int c = 0; c < CHAINS; ++c) acc[c] = m * (double)(c + 1 + get_global_id(0) % 3);
  for (int i = 0; i < iters; ++i)
    for (int c = 0; c < CHAINS; ++c) acc[c] = fma(acc[c], m, a);
  double4 s = acc[0];
  for (int c = 1; c < CHAINS; ++c) s += acc[c];
  out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3;
  if (get_global_id(0) == 0) out[get_global_size(0)] = 4.0;
}
#endif

__kernel void triad(__global float* a, __global const float* b, __global const float* c, int n,
                    float s) {
  const int i = get_global_id(0);
  if (i < n) a[i] = b[i] + s * c[i];
}
