// Lazy-reduction gradients for the cpu backend (kernels/lazy_reduce/grad_problem.cpp has the
// mathematics): rows p of the output (X for the gradient in x, Y for y and b), each reduced over
// every point q of the other set, never an N x M buffer. kforge puts the formula in front as
// #defines: LZ_WRT (0 x, 1 y, 2 b), LZ_RED (0 the sum's gradient, 1 logsumexp's: B is then the
// forward's LSE (N) and each pair is weighted by its softmax exp(f - LSE_i)), LZ_NTERMS, LZ_TERM0/1 (0 sqdist, 1 dot), LZ_F(t0, t1) (the
// formula), LZ_G0/LZ_G1(t0, t1) (its symbolic derivatives in the terms), LZ_SCALAR_PARAMS.
// Without them: the Gaussian sum's gradient in x.
//
// As the sum (lazy_reduce.cpp): a block owns BI rows and walks the other set in tiles of TJ
// points, copied transposed (D x TJ) so that every loop over the tile vectorizes. Per pair it
// computes the terms, then w_k = df/dt_k * weight, then for each coordinate d the chain
// sum_j w_0 * 2 (p_d - q_jd) + w_1 * q_jd (sqdist's and dot's gradients) into the row's D sums.
//
// Parameters (all #defines):
//   BI  rows per block        TJ  points per tile (a multiple of the SIMD width, 16 floats)
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
#ifndef BI
#define BI 16
#endif
#ifndef TJ
#define TJ 64
#endif
#include "kernels/common/lazy_formula.hpp"  // T, vf, the formula's functions on vectors, lz_term

// The term's gradient in p times the pair's weight w, summed over the tile, for coordinate d.
static inline vf lz_chain(int kind, vf w, float pv, vf q) { return kind == 0 ? w * (2.0f * (pv - q)) : w * q; }
// logsumexp's pair weight: the softmax from the forward's lse, shifted before exp (never
// exp(f) / exp(lse): either overflows or underflows where f is far from 0), the exponent
// clamped at 0: lse >= f exactly, so only rounding (or f's error, large for wide inputs) can
// push it above, and a weight stays <= 1 instead of overflowing.
static inline vf lz_softmax(vf f, vf lse) { return expf(kf_min(f - lse, kf_splat(0.0f))); }

// The weights (grad_problem.cpp's table): the row's, applied last, and the summed point's.
// logsumexp: G weighs X's points (the rows for x, the summed points for y); B is LSE.
#if LZ_RED == 1
#define LZ_ROW_W(i) (LZ_WRT == 0 ? G[i] : 1.0f)
#define LZ_COL_W(j) (LZ_WRT == 0 ? 1.0f : G[j])
#else
#define LZ_ROW_W(i) (LZ_WRT == 0 ? G[i] : LZ_WRT == 1 ? B[i] : 1.0f)
#define LZ_COL_W(j) (LZ_WRT == 0 ? B[j] : G[j])
#endif

static void lazy_grad_block(const kf_ctx& c, const T* X, const T* Y, const T* B, const T* G, T* OUT, int N,
                            int M, int D LZ_SCALAR_PARAMS) {
  // Rows and the summed set.
  const T* P = LZ_WRT == 0 ? X : Y;
  const T* Q = LZ_WRT == 0 ? Y : X;
  const int rows = LZ_WRT == 0 ? N : M, inner = LZ_WRT == 0 ? M : N;
  const int width = LZ_WRT == 2 ? 1 : D;
  const int i0 = (int)c.block_idx.x * BI;
  const int ni = rows - i0 < BI ? rows - i0 : BI;
  float* qt = (float*)__builtin_alloca(sizeof(float) * (size_t)D * TJ);
  float* acc = (float*)__builtin_alloca(sizeof(float) * (size_t)BI * width);
  float t0[TJ], t1[TJ] = {}, w0[TJ], w1[TJ] = {}, wt[TJ];  // t1, w1 read (as zeros) by one-term formulas
  float lt[TJ];  // logsumexp in y: the summed points' (X's) lse
  for (int k = 0; k < BI * width; ++k) acc[k] = 0.0f;
  for (int j0 = 0; j0 < inner; j0 += TJ) {
    const int nj = inner - j0 < TJ ? inner - j0 : TJ;
    for (int d = 0; d < D; ++d)
      for (int j = 0; j < TJ; ++j) qt[(long long)d * TJ + j] = j < nj ? Q[(long long)(j0 + j) * D + d] : 0.0f;
    for (int j = 0; j < TJ; ++j) wt[j] = j < nj ? LZ_COL_W(j0 + j) : 0.0f;
    if (LZ_RED == 1 && LZ_WRT == 1)
      for (int j = 0; j < TJ; ++j) lt[j] = j < nj ? B[j0 + j] : 0.0f;
    for (int r = 0; r < ni; ++r) {
      const float* p = P + (long long)(i0 + r) * D;
      lz_term(LZ_TERM0, p, qt, D, t0);
      if (LZ_NTERMS > 1) lz_term(LZ_TERM1, p, qt, D, t1);
#if LZ_WRT == 2
      for (int j = 0; j < TJ; j += KF_VW) kf_store(w0 + j, LZ_F(kf_load(t0 + j), kf_load(t1 + j)));
      for (int j = nj; j < TJ; ++j) w0[j] = 0.0f;  // the padding's f may be anything, even inf
      vf s_ = kf_splat(0.0f);
      for (int j = 0; j < TJ; j += KF_VW) s_ += kf_load(w0 + j) * kf_load(wt + j);
      acc[r] += kf_hsum(s_);
#else
      const vf lrow = kf_splat(LZ_RED == 1 && LZ_WRT == 0 ? B[i0 + r] : 0.0f);  // logsumexp in x: the row's lse
      for (int j = 0; j < TJ; j += KF_VW) {
        const vf a = kf_load(t0 + j), b = kf_load(t1 + j);
        vf w = kf_load(wt + j);
#if LZ_RED == 1
        w = w * lz_softmax(lz_vec(LZ_F(a, b)), LZ_WRT == 0 ? lrow : kf_load(lt + j));
#endif
        kf_store(w0 + j, LZ_G0(a, b) * w);
        if (LZ_NTERMS > 1) kf_store(w1 + j, LZ_G1(a, b) * w);
      }
      for (int j = nj; j < TJ; ++j) w0[j] = w1[j] = 0.0f;
      for (int d = 0; d < D; ++d) {
        const float pv = p[d];
        const float* q = qt + (long long)d * TJ;
        vf s_ = kf_splat(0.0f);
        for (int j = 0; j < TJ; j += KF_VW) {
          const vf qv = kf_load(q + j);
          s_ += lz_chain(LZ_TERM0, kf_load(w0 + j), pv, qv);
          if (LZ_NTERMS > 1) s_ += lz_chain(LZ_TERM1, kf_load(w1 + j), pv, qv);
        }
        acc[r * D + d] += kf_hsum(s_);
      }
#endif
    }
  }
  for (int r = 0; r < ni; ++r) {
    const long long i = i0 + r;
    const float w = LZ_ROW_W(i);
    for (int d = 0; d < width; ++d) OUT[i * width + d] = w * acc[r * width + d];
  }
}

KF_KERNEL(lazy_grad, lazy_grad_block)
