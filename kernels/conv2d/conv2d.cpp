// conv2d for the cpu backend, the general kernel: direct convolution, NCHW, any sizes.
// Each block owns KB filters x PB output rows of one image. It stages, once per block:
//   - the input rows its outputs read (all C channels, zero-padded), split by stride phase in
//     both dimensions, xt[c][col phase][row phase][row][j]: then every window tap (r, s) is one
//     constant offset from the output's position f = p*jw + q in a plane of pitch jw = Q plus
//     the window's reach, and the block's PB output rows are one flat run of positions;
//   - its KB filters, interleaved in groups of KR ([group][c][r][s][KR], zero past K).
// Then a register-tiled micro-kernel computes KR filters x NR = QV*VW consecutive positions of
// that flat run: per (c, r, s) it loads QV input vectors (shared by the KR filters) and
// broadcasts KR weights (shared by the QV vectors): KR*QV FMAs per QV+KR loads. Because the
// vectors run along the flattened plane, not along one output row, a 14- or 7-wide row (ResNet
// conv4_x, conv5_x) still fills the lanes: only the window's reach (jw - Q columns per row) is
// computed and thrown away. Each staged input element is read from memory once per block and
// reused from cache by every filter and window position.
//
// Parameters (all #defines):
//   KR    filters per micro-tile (accumulators: KR * QV vectors)
//   QV    SIMD vectors of positions per micro-tile; NR = QV * VW positions
//   VW    SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   KB    filters per block (a multiple of KR): the weights staged together
//   PB    output rows per block: the input rows staged together
#include <immintrin.h>

#include <cstdlib>

#include "kernels/common/simd.hpp"  // VW, T, vf, scratch()
// Scratch slots: 0 input tile, 1 filters, 2 tap offsets.

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

// Filters k0 .. k0+kb-1 in groups of KR: wt[g][c][r][s][KR], zero past K.
static void stage_filters(const T* w, int K, int crs, int k0, int kb, float* wt) {
  for (int g = 0; g < kb; g += KR)
    for (int e = 0; e < crs; ++e)
      for (int i = 0; i < KR; ++i) {
        const int k = k0 + g + i;
        wt[((long long)g * crs) + e * KR + i] = k < K ? to_f32(w[(long long)k * crs + e]) : 0.0f;
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
#endif
#endif
  const float* lane = (const float*)&v;
  for (int l = a; l < b; ++l) dst[l] = from_f32(lane[l]);
}

static void conv2d_block(const kf_ctx& ctx, const T* x, const T* w, T* y, int N, int C, int H,
                         int W, int K, int R, int S, int stride, int pad, int dil) {
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int p0 = (int)ctx.block_idx.x * PB, k0 = (int)ctx.block_idx.y * KB, n = (int)ctx.block_idx.z;
  const int pb = P - p0 < PB ? P - p0 : PB, kb = K - k0 < KB ? K - k0 : KB;
  const int kb_up = (kb + KR - 1) / KR * KR, RS = R * S, crs = C * RS;
  // Staged planes: jw columns (Q plus the window's reach) x rg rows (pb plus the reach) per
  // (column phase, row phase); the last micro-tile may run up to NR positions past the block's
  // pb*jw, into the next plane or the slack at the end (its outputs are not stored).
  const int jw = Q + ((S - 1) * dil) / stride, rg = pb + ((R - 1) * dil) / stride;
  const long long plane = (long long)rg * jw, cstep = plane * stride * stride;
  const int run = pb * jw;  // the block's flat run of positions f = p*jw + q
  float* xt = (float*)scratch(0, 4ll * (C * cstep + NR + jw));
  float* wt = (float*)scratch(1, 4ll * kb_up * crs);
  int* toff = (int*)scratch(2, 4ll * RS);  // where window tap (r, s) starts, from position f
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s)
      toff[r * S + s] = (int)(((s * dil) % stride * stride + (r * dil) % stride) * plane +
                              (r * dil) / stride * jw + (s * dil) / stride);
  stage_input(x + (long long)n * C * H * W, C, H, W, p0 * stride - pad, rg, stride, pad, jw, xt);
  for (long long e = C * cstep; e < C * cstep + NR + jw; ++e) xt[e] = 0.0f;
  stage_filters(w, K, crs, k0, kb, wt);

  for (int g = 0; g < kb; g += KR) {
    const float* wg = wt + (long long)g * crs;
    for (int f0 = 0; f0 < run; f0 += NR) {
      vf acc[KR][QV];
#pragma GCC unroll 16
      for (int i = 0; i < KR; ++i)
#pragma GCC unroll 8
        for (int v = 0; v < QV; ++v) acc[i][v] = vf{};
      const float* wp = wg;
      for (int c = 0; c < C; ++c) {
        const float* xc = xt + c * cstep + f0;
        for (int t = 0; t < RS; ++t, wp += KR) {
          vf xv[QV];
#pragma GCC unroll 8
          for (int v = 0; v < QV; ++v) xv[v] = *(const vf_unaligned*)(xc + toff[t] + v * VW);
#pragma GCC unroll 16
          for (int i = 0; i < KR; ++i) {
            const float wi = wp[i];
#pragma GCC unroll 8
            for (int v = 0; v < QV; ++v) acc[i][v] += wi * xv[v];
          }
        }
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

KF_KERNEL(conv2d, conv2d_block)
