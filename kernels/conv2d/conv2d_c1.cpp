// conv2d for the cpu backend, the single-input-channel kernel (C = 1: a network's first layer,
// an image filter). Correct for any C, picked by the library when C == 1.
// With one channel the work is K small dot products (R*S long) per input window, and the
// traffic is almost all output: K planes written, one plane read. So the kernel is organized
// around that:
//   - a block owns PB output rows of one image and ALL K filters, so each input row is staged
//     (padded, phase-split for stride > 1) once, and the filters (K*R*S floats) stay in L1;
//   - for each KR x NR micro-tile the R*S input vectors of the window are loaded once and
//     reused by KR filters in registers, then the next KR filters reuse them from L1;
//   - with NT = 1 the output is written with non-temporal (streaming) stores where a row is
//     64-byte aligned: no read-for-ownership of y, no eviction of the input and filters.
//
// Parameters (all #defines):
//   KR    filters per micro-tile (accumulators: KR * QV vectors)
//   QV    SIMD vectors along the output row per micro-tile; NR = QV * VW columns
//   VW    SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   PB    output rows per block
//   NT    1: streaming stores for full, aligned fp32 vectors; 0: ordinary stores
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>

#include "kernels/common/simd.hpp"  // VW, T, vf, scratch()
// Scratch slots: 0 input rows, 1 filters, 2 column offsets.

#define NR (QV * VW)

// xt[c][row][phase][j] = x[n, c, h0 + row, j*stride + phase - pad], zero outside the image.
static void stage_input(const T* x, int C, int H, int W, int h0, int rows, int stride, int pad,
                        int jw, float* xt) {
  for (int c = 0; c < C; ++c)
    for (int row = 0; row < rows; ++row) {
      const int h = h0 + row;
      float* dst = xt + ((long long)c * rows + row) * stride * jw;
      const T* src = x + ((long long)c * H + h) * W;
      for (int ph = 0; ph < stride; ++ph)
        for (int j = 0; j < jw; ++j) {
          const int v = j * stride + ph - pad;
          dst[ph * jw + j] = h >= 0 && h < H && v >= 0 && v < W ? to_f32(src[v]) : 0.0f;
        }
    }
}

// All K filters in groups of KR: wt[g][c][r][s][KR], zero past K.
static void stage_filters(const T* w, int K, int crs, float* wt) {
  for (int g = 0; g < K; g += KR)
    for (int e = 0; e < crs; ++e)
      for (int i = 0; i < KR; ++i)
        wt[(long long)g * crs + e * KR + i] = g + i < K ? to_f32(w[(long long)(g + i) * crs + e]) : 0.0f;
}

static inline void store_vec(T* p, vf v) {
#if NT && !defined(KF_DTYPE_FP16) && !defined(KF_DTYPE_BF16)
  if (((std::uintptr_t)p & (VW * 4 - 1)) == 0) {
    kf_stream(p, v);  // the prelude's: 512 bits as two 256-bit streams without AVX-512
    return;
  }
#endif
  *(vf_unaligned*)p = v;
}

static void conv2d_c1_block(const kf_ctx& ctx, const T* x, const T* w, T* y, int N, int C, int H,
                            int W, int K, int R, int S, int stride, int pad, int dil) {
  (void)N;
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int p0 = (int)ctx.block_idx.x * PB, n = (int)ctx.block_idx.z;
  const int pb = P - p0 < PB ? P - p0 : PB, crs = C * R * S;
  const int rows = (pb - 1) * stride + (R - 1) * dil + 1, h0 = p0 * stride - pad;
  const int jw = (Q + NR - 1) / NR * NR + ((S - 1) * dil) / stride;
  float* xt = (float*)scratch(0, 4ll * C * rows * stride * jw);
  float* wt = (float*)scratch(1, 4ll * ((K + KR - 1) / KR * KR) * crs);
  int* soff = (int*)scratch(2, 4ll * S);
  for (int s = 0; s < S; ++s) soff[s] = (s * dil) % stride * jw + (s * dil) / stride;
  stage_input(x + (long long)n * C * H * W, C, H, W, h0, rows, stride, pad, jw, xt);
  stage_filters(w, K, crs, wt);

  for (int p = 0; p < pb; ++p)
    for (int q0 = 0; q0 < Q; q0 += NR) {
      const int cols = Q - q0 < NR ? Q - q0 : NR;
      for (int g = 0; g < K; g += KR) {
        vf acc[KR][QV];
#pragma GCC unroll 16
        for (int i = 0; i < KR; ++i)
#pragma GCC unroll 8
          for (int v = 0; v < QV; ++v) acc[i][v] = vf{};
        const float* wp = wt + (long long)g * crs;
        for (int c = 0; c < C; ++c)
          for (int r = 0; r < R; ++r) {
            const float* xrow = xt + ((long long)c * rows + p * stride + r * dil) * stride * jw + q0;
            for (int s = 0; s < S; ++s, wp += KR) {
              vf xv[QV];
#pragma GCC unroll 8
              for (int v = 0; v < QV; ++v) xv[v] = *(const vf_unaligned*)(xrow + soff[s] + v * VW);
#pragma GCC unroll 16
              for (int i = 0; i < KR; ++i) {
                const float wi = wp[i];
#pragma GCC unroll 8
                for (int v = 0; v < QV; ++v) acc[i][v] += wi * xv[v];
              }
            }
          }
        for (int i = 0; i < KR && g + i < K; ++i) {
          T* yo = y + (((long long)n * K + g + i) * P + p0 + p) * Q + q0;
#if !defined(KF_DTYPE_FP16) && !defined(KF_DTYPE_BF16)
          if (cols == NR) {
#pragma GCC unroll 8
            for (int v = 0; v < QV; ++v) store_vec(yo + v * VW, acc[i][v]);
            continue;
          }
#endif
          const float* row = (const float*)&acc[i][0];
          for (int j = 0; j < cols; ++j) yo[j] = from_f32(row[j]);
        }
      }
    }
#if NT
  _mm_sfence();  // streaming stores are visible before the block counts as done
#endif
}

KF_KERNEL(conv2d_c1, conv2d_c1_block)
