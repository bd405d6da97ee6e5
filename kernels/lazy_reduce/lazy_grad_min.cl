// Gradients of the min and kmin reductions for the opencl backend (the defines: lazy_grad_min.cpp's
// header; the mathematics: grad_min_problem.cpp). One work-item per output row: for x, row i adds
// its K selected pairs' chains; for y, point j scans every (i, k) of IDX for its own index (a
// scatter without atomics, deterministic), the coordinates' sums in private memory, LZ_DC at a
// time (D > LZ_DC: one scan per LZ_DC coordinates).
//
// Parameters (all #defines):
//   WG  work-items per group
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
#define expf exp
#define logf log
#define sqrtf sqrt
#define powf pow
#define fabsf fabs
#define fminf fmin
#define fmaxf fmax
#define LZ_DC 8

typedef kf_storage T;  // fp32

inline float lz_term(int kind, __global const T* p, __global const T* q, int D) {
  float t = 0.0f;
  for (int d = 0; d < D; ++d) t += kind == 0 ? (p[d] - q[d]) * (p[d] - q[d]) : p[d] * q[d];
  return t;
}
// The term's gradient in p times w.
inline float lz_chain(int kind, float w, float pv, float qv) { return kind == 0 ? w * (2.0f * (pv - qv)) : w * qv; }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void lazy_grad_min(
    __global const T* X, __global const T* Y, __global const T* IDX, __global const T* G, __global T* OUT, int N,
    int M, int D LZ_K_PARAM LZ_SCALAR_PARAMS) {
  const int r = get_global_id(0);
  if (r >= (LZ_WRT == 0 ? N : M)) return;
  const int i_begin = LZ_WRT == 0 ? r : 0, i_end = LZ_WRT == 0 ? r + 1 : N;
  for (int d0 = 0; d0 < D; d0 += LZ_DC) {
    const int nd = D - d0 < LZ_DC ? D - d0 : LZ_DC;
    float acc[LZ_DC];
    for (int d = 0; d < LZ_DC; ++d) acc[d] = 0.0f;
    for (int i = i_begin; i < i_end; ++i)
      for (int k = 0; k < K; ++k) {
        const long e = (long)i * K + k;
        const int j = (int)IDX[e];
        if (LZ_WRT == 1 && j != r) continue;
        __global const T* p = LZ_WRT == 0 ? X + (long)i * D : Y + (long)j * D;
        __global const T* q = LZ_WRT == 0 ? Y + (long)j * D : X + (long)i * D;
        const float t0 = lz_term(LZ_TERM0, p, q, D);
        const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, p, q, D) : 0.0f;
        const float w0 = LZ_G0(t0, t1) * G[e];
        const float w1 = LZ_NTERMS > 1 ? LZ_G1(t0, t1) * G[e] : 0.0f;
        for (int d = 0; d < nd; ++d) {
          acc[d] += lz_chain(LZ_TERM0, w0, p[d0 + d], q[d0 + d]);
          if (LZ_NTERMS > 1) acc[d] += lz_chain(LZ_TERM1, w1, p[d0 + d], q[d0 + d]);
        }
      }
    for (int d = 0; d < nd; ++d) OUT[(long)r * D + d0 + d] = acc[d];
  }
}
