// conv2d for the cpu backend, the general kernel: direct convolution, NCHW, any sizes.
// Each block owns KB filters x PB output rows of one image. It stages, once per block, the
// input rows its outputs read (all C channels, zero-padded), split by stride phase in both
// dimensions, xt[c][col phase][row phase][row][j]: then every window tap (r, s) is one constant
// offset from the output's position f = p*jw + q in a plane of pitch jw = Q plus the window's
// reach, and the block's PB output rows are one flat run of positions. The filters are read
// where they lie in w (fp32; 16-bit storage is converted once per block).
// A register-tiled micro-kernel computes KR filters x NR = QV*VW consecutive positions of that
// flat run: per (c, r, s) it loads QV input vectors (shared by the KR filters) and broadcasts KR
// weights (shared by the QV vectors): KR*QV FMAs per QV+KR loads. Because the vectors run along
// the flattened plane, not along one output row, a 14- or 7-wide row (ResNet conv4_x, conv5_x)
// still fills the lanes: only the window's reach (jw - Q columns per row) is computed and
// thrown away. The reduction runs in blocks of CB channels: each block's filter taps and input
// stay in L1 while every (positions, filter group) tile of the block walks them, the tiles'
// partial sums kept in an fp32 buffer between channel blocks (at C = 512, vgg16 conv4_2, this
// took the kernel from a walk through L2 to L1, 1.7x). 3x3 windows at stride 1 (ResNet, VGG)
// take an unrolled path whose taps are constant offsets from two registers.
//
// Parameters (all #defines):
//   KR    filters per micro-tile (accumulators: KR * QV vectors)
//   QV    SIMD vectors of positions per micro-tile; NR = QV * VW positions
//   VW    SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   KB    filters per block (a multiple of KR): the weights staged together
//   PB    output rows per block: the input rows staged together
//   CB    channels per channel block (partial sums carried between blocks; >= C: no blocking)
//   PF    1: prefetch the next channel block's filter taps
#include <immintrin.h>

#include <cstdlib>

#include "kernels/common/simd.hpp"  // VW, T, vf, scratch()
// Scratch slots: 0 input tile, 1 fp32 filters (16-bit storage), 2 tap offsets, 3 partial sums.

#define NR (QV * VW)

// The input rows of image n that output rows p0.. read, phase-split:
// xt[c][cp][rp][g][j] = x[n, c, h0 + g*stride + rp, j*stride + cp - pad] (h0 = p0*stride - pad),
// zero outside the image; g < rg rows per phase, j < jw columns per phase.
static void stage_input(const T* x, int C, int H, int W, int h0, int rg, int stride, int pad,
                        int jw, float* xt) {
  for (int c = 0; c < C; ++c)
    for (int cp = 0; cp < stride; ++cp)
      for (int rp = 0; rp < stride; ++rp)
        for (int g = 0; g < rg; ++g) {
          const int h = h0 + g * stride + rp;
          float* dst = xt + (((long long)c * stride + cp) * stride + rp) * rg * jw + (long long)g * jw;
          if (h < 0 || h >= H) {
            for (int j = 0; j < jw; ++j) dst[j] = 0.0f;
            continue;
          }
          const T* src = x + ((long long)c * H + h) * W;
          for (int j = 0; j < jw; ++j) {
            const int v = j * stride + cp - pad;
            dst[j] = v >= 0 && v < W ? to_f32(src[v]) : 0.0f;
          }
        }
}

#if defined(KF_DTYPE_FP16) || defined(KF_DTYPE_BF16)
// 16-bit storage: filters k0 .. k0+kb-1 converted to fp32 once per block, rows as in w.
static void convert_filters(const T* w, int crs, int k0, int kb, float* wt) {
  for (long long e = 0; e < (long long)kb * crs; ++e) wt[e] = to_f32(w[(long long)k0 * crs + e]);
}
#endif

// One step of the reduction, window tap e of every filter row: QV input vectors from x, KR
// weights broadcast (wr[i][e]), KR*QV FMAs.
static inline __attribute__((always_inline)) void step(vf acc[KR][QV], const float* const* wr,
                                                        int e, const float* x) {
  vf xv[QV];
#pragma GCC unroll 8
  for (int v = 0; v < QV; ++v) {
    xv[v] = *(const vf_unaligned*)(x + v * VW);
    // Held in a register: left alone, GCC folds the load into each of the KR FMAs (KR loads
    // of one vector, most crossing a cache line), and the load ports, not the FMAs, bound it.
#if (VW == 8 && defined(__AVX__)) || (VW == 16 && defined(__AVX512F__))  // one register
    asm("" : "+x"(xv[v]));
#endif
  }
#pragma GCC unroll 16
  for (int i = 0; i < KR; ++i) {
    const float wi = wr[i][e];
#pragma GCC unroll 8
    for (int v = 0; v < QV; ++v) acc[i][v] += wi * xv[v];
  }
}

// A micro-tile's reduction over channels c0 .. c1-1 (x at channel c0 and the tile's first
// position). TAPS3 (3x3, stride 1, dilation 1: the ResNet/VGG case) unrolls the window with tap
// (r, s) at x + r*jw + s, addresses the compiler forms from two registers; otherwise each tap
// is at its offset toff[t].
template <bool TAPS3>
static inline __attribute__((always_inline)) void reduce(vf acc[KR][QV], const float* const* wr,
                                                         int c0, int c1, int RS, const float* x,
                                                         long long cstep, const int* toff, int jw) {
  for (int c = c0; c < c1; ++c, x += cstep) {
    const int e = c * RS;
    if constexpr (TAPS3) {
      const float* xr = x;
#pragma GCC unroll 1
      for (int r = 0; r < 3; ++r, xr += jw)
#pragma GCC unroll 3
        for (int s = 0; s < 3; ++s) step(acc, wr, e + r * 3 + s, xr + s);
    } else {
      for (int t = 0; t < RS; ++t) step(acc, wr, e + t, x + toff[t]);
    }
  }
}

// lanes [a, b) of v -> dst[a..b) (dst may point before the row: lanes outside [a, b) are
// never written).
static inline void store_lanes(T* dst, vf v, int a, int b) {
#if !defined(KF_DTYPE_FP16) && !defined(KF_DTYPE_BF16)
  if (a == 0 && b == VW) {
    *(vf_unaligned*)dst = v;
    return;
  }
#if VW == 16 && defined(__AVX512F__)
  _mm512_mask_storeu_ps(dst, (__mmask16)(((1u << (b - a)) - 1) << a), (__m512)v);
  return;
#elif VW == 8 && defined(__AVX2__)
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i in = _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(a - 1)),
                                      _mm256_cmpgt_epi32(_mm256_set1_epi32(b), idx));
  _mm256_maskstore_ps(dst, in, (__m256)v);
  return;
#endif
#endif
  const float* lane = (const float*)&v;
  for (int l = a; l < b; ++l) dst[l] = from_f32(lane[l]);
}

template <bool TAPS3>
static void conv2d_tiles(const kf_ctx& ctx, const T* x, const T* w, T* y, int N, int C, int H,
                         int W, int K, int R, int S, int stride, int pad, int dil) {
  (void)N;
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int p0 = (int)ctx.block_idx.x * PB, k0 = (int)ctx.block_idx.y * KB, n = (int)ctx.block_idx.z;
  const int pb = P - p0 < PB ? P - p0 : PB, kb = K - k0 < KB ? K - k0 : KB;
  const int RS = R * S, crs = C * RS;
  // Staged planes: jw columns (Q plus the window's reach) x rg rows (pb plus the reach) per
  // (column phase, row phase); the last micro-tile may run up to NR positions past the block's
  // pb*jw, into the next plane or the slack at the end (its outputs are not stored).
  const int jw = Q + ((S - 1) * dil) / stride, rg = pb + ((R - 1) * dil) / stride;
  const long long plane = (long long)rg * jw, cstep = plane * stride * stride;
  const int run = pb * jw;  // the block's flat run of positions f = p*jw + q
  float* xt = (float*)scratch(0, 4ll * (C * cstep + NR + jw));
  int* toff = (int*)scratch(2, 4ll * RS);  // where window tap (r, s) starts, from position f
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s)
      toff[r * S + s] = (int)(((s * dil) % stride * stride + (r * dil) % stride) * plane +
                              (r * dil) / stride * jw + (s * dil) / stride);
  stage_input(x + (long long)n * C * H * W, C, H, W, p0 * stride - pad, rg, stride, pad, jw, xt);
  for (long long e = C * cstep; e < C * cstep + NR + jw; ++e) xt[e] = 0.0f;
  // The filters are read where they lie (fp32): broadcast straight from w's rows, no staging
  // (staging cost a copy of every filter per block, a third of the time where P*Q is small).
#if defined(KF_DTYPE_FP16) || defined(KF_DTYPE_BF16)
  float* wk = (float*)scratch(1, 4ll * kb * crs);
  convert_filters(w, crs, k0, kb, wk);
#else
  const float* wk = w + (long long)k0 * crs;
#endif

  // Channel blocks: the CB channels' taps of the block's filters (kb*CB*R*S floats) and the
  // input a micro-tile reads from them stay in L1 while every (position, filter group) tile
  // walks them; partial sums wait in an fp32 buffer between channel blocks.
  const int ntile = (run + NR - 1) / NR, kgroups = (kb + KR - 1) / KR, cbs = C < CB ? C : CB;
  float* part = C > cbs ? (float*)scratch(3, 4ll * kgroups * ntile * KR * NR) : nullptr;
  for (int c0 = 0; c0 < C; c0 += cbs) {
    const int c1 = C - c0 < cbs ? C : c0 + cbs;
    const bool first = c0 == 0, last = c1 == C;
    // The next channel block's taps of every filter: kb short runs a filter row apart, too
    // many streams for the hardware prefetcher (at 7x7 outputs, conv5_x, each weight feeds
    // only 49 products and a block waited on them from memory).
    if (PF && c1 < C) {
      const int e1 = c1 * RS, ne = (C - c1 < cbs ? C - c1 : cbs) * RS;
      for (int k = 0; k < kb; ++k)
        for (int e = 0; e < ne + 15; e += 16) __builtin_prefetch(wk + (long long)k * crs + e1 + e);
    }
    for (int f0 = 0, tile = 0; f0 < run; f0 += NR, ++tile) {
      for (int g = 0; g < kb; g += KR) {
        // Rows past the block's filters repeat its last one (computed, never stored).
        const float* wr[KR];
#pragma GCC unroll 16
        for (int i = 0; i < KR; ++i) wr[i] = wk + (long long)(g + i < kb ? g + i : kb - 1) * crs;
        vf acc[KR][QV];
        // [group][tile][KR][QV] vectors: each tile's partials contiguous and aligned.
        vf* pp = part ? (vf*)(part + ((long long)(g / KR) * ntile + tile) * KR * NR) : nullptr;
#pragma GCC unroll 16
        for (int i = 0; i < KR; ++i)
#pragma GCC unroll 8
          for (int v = 0; v < QV; ++v) acc[i][v] = first ? vf{} : pp[i * QV + v];
        reduce<TAPS3>(acc, wr, c0, c1, RS, xt + c0 * cstep + f0, cstep, toff, jw);
        if (!last) {
#pragma GCC unroll 16
          for (int i = 0; i < KR; ++i)
#pragma GCC unroll 8
            for (int v = 0; v < QV; ++v) pp[i * QV + v] = acc[i][v];
          continue;
        }
        // Store the valid positions: rows < pb, columns < Q, filters < K; each vector in runs
        // of consecutive columns of one output row.
#pragma GCC unroll 8
        for (int v = 0; v < QV; ++v) {
          const int fv = f0 + v * VW;
          for (int f = fv; f < fv + VW;) {
            const int p = f / jw, q = f - p * jw;
            if (p >= pb) break;
            if (q >= Q) {  // the window's reach: skip to the next row
              f += jw - q;
              continue;
            }
            const int end = fv + VW < f + Q - q ? fv + VW : f + Q - q;
            for (int i = 0; i < KR && g + i < kb; ++i) {
              T* yrow = y + (((long long)n * K + k0 + g + i) * P + p0 + p) * Q + q;
              store_lanes(yrow - (f - fv), acc[i][v], f - fv, end - fv);
            }
            f = end;
          }
        }
      }
    }
  }
}

static void conv2d_block(const kf_ctx& ctx, const T* x, const T* w, T* y, int N, int C, int H,
                         int W, int K, int R, int S, int stride, int pad, int dil) {
  if (R == 3 && S == 3 && stride == 1 && dil == 1)
    conv2d_tiles<true>(ctx, x, w, y, N, C, H, W, K, R, S, stride, pad, dil);
  else
    conv2d_tiles<false>(ctx, x, w, y, N, C, H, W, K, R, S, stride, pad, dil);
}

KF_KERNEL(conv2d, conv2d_block)
