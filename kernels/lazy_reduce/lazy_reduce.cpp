// Lazy reductions for the cpu backend: f(x_i, y_j) reduced over j, never an N x M buffer.
// kforge puts the formula in front of this template as #defines (kernels/lazy_reduce/problem.cpp,
// generated_prefix): LZ_REDUCE (0 sum, 1 logsumexp, 2 min, 3 argmin, 4 kmin), LZ_NTERMS and
// LZ_TERM0/1 (the pair terms: 0 sqdist, 1 dot), LZ_F(t0, t1) (the formula over the terms and the
// scalars), LZ_SCALAR_PARAMS (the scalars as float parameters). Without them: the Gaussian sum.
//
// A block owns BI consecutive rows i. It walks the points j in tiles of TJ, copying each tile
// transposed (D x TJ floats, in L1) so that each pair term is a loop over j the compiler
// vectorizes; every row of the block reuses the tile. Per row, only its reduction state lives
// across tiles (E sums, a running max and sum, or a sorted list of K candidates).
//
// Parameters (all #defines):
//   BI  rows per block        TJ  points per tile (a multiple of the SIMD width, 16 floats)
#ifndef LZ_REDUCE
#define LZ_REDUCE 0
#define LZ_NTERMS 1
#define LZ_TERM0 0
#define LZ_TERM1 0
#define LZ_F(t0, t1) (expf((-(t0)) / s))
#define LZ_SCALAR_PARAMS , float s
#endif
#ifndef BI
#define BI 16
#endif
#ifndef TJ
#define TJ 64
#endif
#include "kernels/common/lazy_formula.hpp"  // T, vf, the formula's functions on vectors, lz_term

#if LZ_REDUCE == 0
#define LZ_ARGS const T* X, const T* Y, const T* B, T* OUT, int N, int M, int D, int E
#elif LZ_REDUCE == 4
#define LZ_ARGS const T* X, const T* Y, T* DIST, T* IDX, int N, int M, int D, int K
#else
#define LZ_ARGS const T* X, const T* Y, T* OUT, int N, int M, int D
#endif

static void lazy_reduce_block(const kf_ctx& c, LZ_ARGS LZ_SCALAR_PARAMS) {
  const int i0 = (int)c.block_idx.x * BI;
  const int ni = N - i0 < BI ? N - i0 : BI;
  float* yt = (float*)__builtin_alloca(sizeof(float) * (size_t)D * TJ);
  float t0[TJ], t1[TJ] = {}, f[TJ];  // t1 read (as zeros) by one-term formulas too
#if LZ_REDUCE == 0
  float* acc = (float*)__builtin_alloca(sizeof(float) * (size_t)BI * E);
  float* bt = (float*)__builtin_alloca(sizeof(float) * (size_t)E * TJ);  // (E, TJ): the tile's weights
  for (int k = 0; k < BI * E; ++k) acc[k] = 0.0f;
#elif LZ_REDUCE == 1
  float mx[BI], sm[BI];
  for (int r = 0; r < BI; ++r) mx[r] = -INFINITY, sm[r] = 0.0f;
#elif LZ_REDUCE == 2 || LZ_REDUCE == 3
  float best[BI];
  int at[BI];
  for (int r = 0; r < BI; ++r) best[r] = INFINITY, at[r] = 0;
#else
  float* kd = (float*)__builtin_alloca(sizeof(float) * (size_t)BI * K);
  int* ki = (int*)__builtin_alloca(sizeof(int) * (size_t)BI * K);
  for (int k = 0; k < BI * K; ++k) kd[k] = INFINITY, ki[k] = -1;
#endif
  for (int j0 = 0; j0 < M; j0 += TJ) {
    const int nj = M - j0 < TJ ? M - j0 : TJ;
    for (int d = 0; d < D; ++d)
      for (int j = 0; j < TJ; ++j) yt[(long long)d * TJ + j] = j < nj ? Y[(long long)(j0 + j) * D + d] : 0.0f;
#if LZ_REDUCE == 0
    for (int e = 0; e < E; ++e)
      for (int j = 0; j < TJ; ++j) bt[(long long)e * TJ + j] = j < nj ? B[(long long)(j0 + j) * E + e] : 0.0f;
#endif
    for (int r = 0; r < ni; ++r) {
      const float* x = X + (long long)(i0 + r) * D;
      lz_term(LZ_TERM0, x, yt, D, t0);
      if (LZ_NTERMS > 1) lz_term(LZ_TERM1, x, yt, D, t1);
      for (int j = 0; j < TJ; j += KF_VW) kf_store(f + j, LZ_F(kf_load(t0 + j), kf_load(t1 + j)));
#if LZ_REDUCE == 0
      // bt's padding is 0, so the tile's tail adds nothing (f there may be anything finite).
      for (int j = nj; j < TJ; ++j) f[j] = 0.0f;
      for (int e = 0; e < E; ++e) {
        vf s_ = kf_splat(0.0f);
        for (int j = 0; j < TJ; j += KF_VW) s_ += kf_load(f + j) * kf_load(bt + (long long)e * TJ + j);
        acc[r * E + e] += kf_hsum(s_);
      }
#elif LZ_REDUCE == 1
      // The running max: the tile's max becomes the shift, the sum so far rescaled to it.
      for (int j = nj; j < TJ; ++j) f[j] = -INFINITY;
      vf vm = kf_splat(-INFINITY);
      for (int j = 0; j < TJ; j += KF_VW) vm = kf_max(vm, kf_load(f + j));
      const float tm = kf_hmax(vm);
      if (tm > mx[r]) sm[r] *= expf(mx[r] - tm), mx[r] = tm;
      if (mx[r] == -INFINITY) continue;
      vf s_ = kf_splat(0.0f);
      for (int j = 0; j < TJ; j += KF_VW) s_ += kf_exp(kf_load(f + j) - mx[r]);
      sm[r] += kf_hsum(s_);
#elif LZ_REDUCE == 2 || LZ_REDUCE == 3
      for (int j = 0; j < nj; ++j)  // strict: a tie keeps the first index
        if (f[j] < best[r]) best[r] = f[j], at[r] = j0 + j;
#else
      float* d_ = kd + r * K;
      int* k_ = ki + r * K;
      for (int j = 0; j < nj; ++j) {
        if (!(f[j] < d_[K - 1])) continue;  // strict: a tie keeps the earlier index
        int p = K - 1;
        while (p > 0 && d_[p - 1] > f[j]) d_[p] = d_[p - 1], k_[p] = k_[p - 1], --p;
        d_[p] = f[j], k_[p] = j0 + j;
      }
#endif
    }
  }
  for (int r = 0; r < ni; ++r) {
    const long long i = i0 + r;
#if LZ_REDUCE == 0
    for (int e = 0; e < E; ++e) OUT[i * E + e] = acc[r * E + e];
#elif LZ_REDUCE == 1
    OUT[i] = mx[r] + logf(sm[r]);
#elif LZ_REDUCE == 2
    OUT[i] = best[r];
#elif LZ_REDUCE == 3
    OUT[i] = (float)at[r];
#else
    for (int k = 0; k < K; ++k) DIST[i * K + k] = kd[r * K + k], IDX[i * K + k] = (float)ki[r * K + k];
#endif
  }
}

KF_KERNEL(lazy_reduce, lazy_reduce_block)
