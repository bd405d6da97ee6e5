// Lazy-reduction gradients for the opencl backend (the defines: lazy_grad.cpp's header; the
// mathematics: grad_problem.cpp). One work-item per output row p walks every point q of the other
// set: the pair terms, their derivatives times the weight, then the chain into the row's sums
// for up to LZ_DC coordinates in private memory; a row of D > LZ_DC coordinates walks the set
// once per LZ_DC of them (the pairs recomputed, as the sum does for its E columns).
//
// Parameters (all #defines):
//   WG  work-items per group
#ifndef LZ_WRT
#define LZ_WRT 0
#define LZ_RED 0
#define LZ_NTERMS 1
#define LZ_TERM0 0
#define LZ_TERM1 0
#define LZ_F(t0, t1) (expf((-(t0)) / s))
#define LZ_G0(t0, t1) ((-expf((-(t0)) / s)) / s)
#define LZ_G1(t0, t1) (0.0f)
#define LZ_SCALAR_PARAMS , float s
#endif
#define expf exp
#define logf log
#define sqrtf sqrt
#define powf pow
#define fabsf fabs
#define fminf fmin
#define fmaxf fmax
#define LZ_DC 8

// The weights (grad_problem.cpp's table): the row's, applied last, and the summed point's.
// logsumexp (LZ_RED 1): G weighs X's points; B is the forward's LSE (N), and each pair is also
// weighted by its softmax exp(f - LSE of its x), shifted before exp, the exponent clamped at 0.
#if LZ_RED == 1
#define LZ_ROW_W(i) (LZ_WRT == 0 ? G[i] : 1.0f)
#define LZ_COL_W(j) (LZ_WRT == 0 ? 1.0f : G[j])
#else
#define LZ_ROW_W(i) (LZ_WRT == 0 ? G[i] : LZ_WRT == 1 ? B[i] : 1.0f)
#define LZ_COL_W(j) (LZ_WRT == 0 ? B[j] : G[j])
#endif

typedef kf_storage T;  // fp32

inline float lz_term(int kind, __global const T* p, __global const T* q, int D) {
  float t = 0.0f;
  for (int d = 0; d < D; ++d) t += kind == 0 ? (p[d] - q[d]) * (p[d] - q[d]) : p[d] * q[d];
  return t;
}
// The term's gradient in p times w.
inline float lz_chain(int kind, float w, float pv, float qv) { return kind == 0 ? w * (2.0f * (pv - qv)) : w * qv; }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void lazy_grad(
    __global const T* X, __global const T* Y, __global const T* B, __global const T* G, __global T* OUT, int N,
    int M, int D LZ_SCALAR_PARAMS) {
  __global const T* P = LZ_WRT == 0 ? X : Y;
  __global const T* Q = LZ_WRT == 0 ? Y : X;
  const int rows = LZ_WRT == 0 ? N : M, inner = LZ_WRT == 0 ? M : N;
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const T* p = P + (long)r * D;
#if LZ_WRT == 2
  float acc = 0.0f;
  for (int j = 0; j < inner; ++j) {
    __global const T* q = Q + (long)j * D;
    const float t0 = lz_term(LZ_TERM0, p, q, D);
    const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, p, q, D) : 0.0f;
    acc += LZ_F(t0, t1) * LZ_COL_W(j);
  }
  OUT[r] = acc;
#else
  for (int d0 = 0; d0 < D; d0 += LZ_DC) {
    const int nd = D - d0 < LZ_DC ? D - d0 : LZ_DC;
    float acc[LZ_DC];
    for (int d = 0; d < LZ_DC; ++d) acc[d] = 0.0f;
    for (int j = 0; j < inner; ++j) {
      __global const T* q = Q + (long)j * D;
      const float t0 = lz_term(LZ_TERM0, p, q, D);
      const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, p, q, D) : 0.0f;
      float w = LZ_COL_W(j);
#if LZ_RED == 1
      w *= expf(fmin(LZ_F(t0, t1) - B[LZ_WRT == 0 ? r : j], 0.0f));  // clamped at 0: lazy_grad.cpp's lz_softmax
#endif
      const float w0 = LZ_G0(t0, t1) * w;
      const float w1 = LZ_NTERMS > 1 ? LZ_G1(t0, t1) * w : 0.0f;
      for (int d = 0; d < nd; ++d) {
        acc[d] += lz_chain(LZ_TERM0, w0, p[d0 + d], q[d0 + d]);
        if (LZ_NTERMS > 1) acc[d] += lz_chain(LZ_TERM1, w1, p[d0 + d], q[d0 + d]);
      }
    }
    const float wr = LZ_ROW_W(r);
    for (int d = 0; d < nd; ++d) OUT[(long)r * D + d0 + d] = wr * acc[d];
  }
#endif
}
