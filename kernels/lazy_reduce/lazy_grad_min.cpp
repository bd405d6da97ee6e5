// Gradients of the min and kmin reductions for the cpu backend (grad_min_problem.cpp has the
// mathematics): the gradient flows through the forward's selected indices IDX (N,K) only.
// kforge puts the formula in front as #defines: LZ_WRT (0 x, 1 y), LZ_K_PARAM (", int K" for
// kmin; min defines K 1), LZ_NTERMS, LZ_TERM0/1 (0 sqdist, 1 dot), LZ_G0/LZ_G1(t0, t1) (the
// formula's symbolic derivatives in its terms), LZ_SCALAR_PARAMS. Without them: the x-gradient
// of min of sqdist.
//
// gradient in x: a row i adds its K selected pairs' chains, O(K D) per row, no pass over Y.
// gradient in y: a block owns BI points j and scans every (i, k) of IDX for those it owns (a
// scatter without atomics: deterministic, the block's rows in registers of its own), O(N K)
// per block. Neither is a reduction over all pairs, so there is nothing for SIMD to batch: the
// work is O(N K D) flops against the forward's O(N M D).
//
// Parameters (all #defines):
//   BI  rows (output points) per block
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
#ifndef BI
#define BI 64
#endif
#include <math.h>

typedef kf_storage T;  // fp32

static inline float lz_pair_term(int kind, const T* p, const T* q, int D) {
  float t = 0.0f;
  for (int d = 0; d < D; ++d) t += kind == 0 ? (p[d] - q[d]) * (p[d] - q[d]) : p[d] * q[d];
  return t;
}
// The term's gradient in p times w.
static inline float lz_chain(int kind, float w, float pv, float qv) { return kind == 0 ? w * (2.0f * (pv - qv)) : w * qv; }

static void lazy_grad_min_block(const kf_ctx& c, const T* X, const T* Y, const T* IDX, const T* G, T* OUT, int N,
                                int M, int D LZ_K_PARAM LZ_SCALAR_PARAMS) {
  const int rows = LZ_WRT == 0 ? N : M;
  const int r0 = (int)c.block_idx.x * BI;
  const int nr = rows - r0 < BI ? rows - r0 : BI;
  float* acc = (float*)__builtin_alloca(sizeof(float) * (size_t)BI * D);
  for (long long e = 0; e < (long long)BI * D; ++e) acc[e] = 0.0f;
  // Rows of X in order; for x only this block's, for y every row (its selected j checked).
  const int i_begin = LZ_WRT == 0 ? r0 : 0, i_end = LZ_WRT == 0 ? r0 + nr : N;
  for (int i = i_begin; i < i_end; ++i)
    for (int k = 0; k < K; ++k) {
      const long long e = (long long)i * K + k;
      const int j = (int)IDX[e];
      const int r = (LZ_WRT == 0 ? i : j) - r0;  // the output row in this block
      if (LZ_WRT == 1 && (unsigned)r >= (unsigned)nr) continue;
      const T* p = LZ_WRT == 0 ? X + (long long)i * D : Y + (long long)j * D;
      const T* q = LZ_WRT == 0 ? Y + (long long)j * D : X + (long long)i * D;
      const float t0 = lz_pair_term(LZ_TERM0, p, q, D);
      const float t1 = LZ_NTERMS > 1 ? lz_pair_term(LZ_TERM1, p, q, D) : 0.0f;
      const float w0 = LZ_G0(t0, t1) * G[e];
      const float w1 = LZ_NTERMS > 1 ? LZ_G1(t0, t1) * G[e] : 0.0f;
      float* a = acc + (long long)r * D;
      for (int d = 0; d < D; ++d) {
        a[d] += lz_chain(LZ_TERM0, w0, p[d], q[d]);
        if (LZ_NTERMS > 1) a[d] += lz_chain(LZ_TERM1, w1, p[d], q[d]);
      }
    }
  for (int r = 0; r < nr; ++r)
    for (int d = 0; d < D; ++d) OUT[(long long)(r0 + r) * D + d] = acc[(long long)r * D + d];
}

KF_KERNEL(lazy_grad_min, lazy_grad_min_block)
