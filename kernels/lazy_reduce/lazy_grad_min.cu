// Gradients of the min and kmin reductions for the cuda backend (the defines: lazy_grad_min.cpp's
// header; the mathematics: grad_min_problem.cpp). As the opencl kernel: one thread per output row;
// for x, row i adds its K selected pairs' chains; for y, point j scans every (i, k) of IDX for
// its own index (neighbouring threads read the same IDX element at once: one broadcast), LZ_DC
// coordinates' sums in registers at a time. Compiled for sm_90 here, untimed (no GPU).
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)
#ifndef LZ_WRT
#define LZ_WRT 0
#define LZ_K_PARAM
#define K 1
#define LZ_NTERMS 1
#define LZ_TERM0 0
#define LZ_TERM1 0
#define LZ_F(t0, t1) (t0)
#define LZ_G0(t0, t1) (1.0f)
#define LZ_G1(t0, t1) (0.0f)
#define LZ_SCALAR_PARAMS
#endif
#define LZ_DC 8

typedef kf_storage T;  // fp32

__device__ __forceinline__ float lz_term(int kind, const T* p, const T* q, int D) {
  float t = 0.0f;
  for (int d = 0; d < D; ++d) t += kind == 0 ? (p[d] - q[d]) * (p[d] - q[d]) : p[d] * q[d];
  return t;
}
// The term's gradient in p times w.
__device__ __forceinline__ float lz_chain(int kind, float w, float pv, float qv) {
  return kind == 0 ? w * (2.0f * (pv - qv)) : w * qv;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    lazy_grad_min(const T* __restrict__ X, const T* __restrict__ Y, const T* __restrict__ IDX,
                  const T* __restrict__ G, T* OUT, int N, int M, int D LZ_K_PARAM LZ_SCALAR_PARAMS) {
  const int r = blockIdx.x * THREADS + threadIdx.x;
  if (r >= (LZ_WRT == 0 ? N : M)) return;
  const int i_begin = LZ_WRT == 0 ? r : 0, i_end = LZ_WRT == 0 ? r + 1 : N;
  for (int d0 = 0; d0 < D; d0 += LZ_DC) {
    const int nd = min(LZ_DC, D - d0);
    float acc[LZ_DC];
#pragma unroll
    for (int d = 0; d < LZ_DC; ++d) acc[d] = 0.0f;
    for (int i = i_begin; i < i_end; ++i)
      for (int k = 0; k < K; ++k) {
        const long long e = (long long)i * K + k;
        const int j = (int)IDX[e];
        if (LZ_WRT == 1 && j != r) continue;
        const T* p = LZ_WRT == 0 ? X + (long long)i * D : Y + (long long)j * D;
        const T* q = LZ_WRT == 0 ? Y + (long long)j * D : X + (long long)i * D;
        const float t0 = lz_term(LZ_TERM0, p, q, D);
        const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, p, q, D) : 0.0f;
        const float w0 = LZ_G0(t0, t1) * G[e];
        const float w1 = LZ_NTERMS > 1 ? LZ_G1(t0, t1) * G[e] : 0.0f;
#pragma unroll
        for (int d = 0; d < LZ_DC; ++d)
          if (d < nd) {
            acc[d] += lz_chain(LZ_TERM0, w0, p[d0 + d], q[d0 + d]);
            if (LZ_NTERMS > 1) acc[d] += lz_chain(LZ_TERM1, w1, p[d0 + d], q[d0 + d]);
          }
      }
    for (int d = 0; d < nd; ++d) OUT[(long long)r * D + d0 + d] = acc[d];
  }
}
