// conv2d for the cpu backend, the general kernel: direct convolution, NCHW, any sizes.
// Each block owns KB filters x PB output rows of one image. It stages, once per block:
//   - the input rows its outputs read (all C channels, padded with zeros, and for stride > 1
//     split into `stride` phases so that every window offset is a contiguous run of columns),
//   - its KB filters, interleaved in groups of KR ([group][c][r][s][KR], zero past K).
// Then a register-tiled micro-kernel computes KR filters x NR = QV*VW output columns: per
// (c, r, s) it loads QV input vectors (shared by the KR filters) and broadcasts KR weights
// (shared by the QV vectors): KR*QV FMAs per QV+KR loads. Each staged input element is read
// from memory once per block and reused from cache by every filter and window position.
//
// Parameters (all #defines):
//   KR    filters per micro-tile (accumulators: KR * QV vectors)
//   QV    SIMD vectors along the output row per micro-tile; NR = QV * VW columns
//   VW    SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   KB    filters per block (a multiple of KR): the weights staged together
//   PB    output rows per block: the input rows staged together
#include <cstdlib>

#if VW == 0
#undef VW
#if defined(__AVX512F__)
#define VW 16
#else
#define VW 8
#endif
#endif
#define NR (QV * VW)

// The dtype's storage and its conversions (src/backend/cpu/prelude.hpp).
typedef kf_storage T;
static inline float to_f32(T x) { return kf_to_f32(x); }
static inline T from_f32(float f) { return kf_from_f32(f); }

typedef float vf __attribute__((vector_size(VW * 4)));
typedef float vf_unaligned __attribute__((vector_size(VW * 4), aligned(4)));

// Per-thread scratch (0: input tile, 1: filters, 2: column offsets), grown on demand.
static void* scratch(int which, long long bytes) {
  static thread_local void* buf[3] = {nullptr, nullptr, nullptr};
  static thread_local long long cap[3] = {0, 0, 0};
  if (cap[which] < bytes) {
    std::free(buf[which]);
    buf[which] = std::aligned_alloc(64, ((bytes + 63) / 64) * 64);
    cap[which] = bytes;
  }
  return buf[which];
}

// Input rows h0 .. h0+rows-1 (image coordinates, may lie outside) of every channel of image n:
// xt[c][row][phase][j] = x[n, c, h0 + row, j*stride + phase - pad], zero outside the image.
static void stage_input(const T* x, int C, int H, int W, int h0, int rows, int stride, int pad,
                        int jw, float* xt) {
  for (int c = 0; c < C; ++c)
    for (int row = 0; row < rows; ++row) {
      const int h = h0 + row;
      float* dst = xt + ((long long)c * rows + row) * stride * jw;
      if (h < 0 || h >= H) {
        for (int e = 0; e < stride * jw; ++e) dst[e] = 0.0f;
        continue;
      }
      const T* src = x + ((long long)c * H + h) * W;
      for (int ph = 0; ph < stride; ++ph)
        for (int j = 0; j < jw; ++j) {
          const int v = j * stride + ph - pad;
          dst[ph * jw + j] = v >= 0 && v < W ? to_f32(src[v]) : 0.0f;
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

static void conv2d_block(const kf_ctx& ctx, const T* x, const T* w, T* y, int N, int C, int H,
                         int W, int K, int R, int S, int stride, int pad, int dil) {
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int p0 = (int)ctx.block_idx.x * PB, k0 = (int)ctx.block_idx.y * KB, n = (int)ctx.block_idx.z;
  const int pb = P - p0 < PB ? P - p0 : PB, kb = K - k0 < KB ? K - k0 : KB;
  const int kb_up = (kb + KR - 1) / KR * KR, crs = C * R * S;
  // Staged tile: output rows p0..p0+pb-1 read input rows from h0 on; columns up to the last
  // micro-tile's end (a multiple of NR) plus the window's reach, per phase.
  const int rows = (pb - 1) * stride + (R - 1) * dil + 1, h0 = p0 * stride - pad;
  const int jw = (Q + NR - 1) / NR * NR + ((S - 1) * dil) / stride;
  float* xt = (float*)scratch(0, 4ll * C * rows * stride * jw);
  float* wt = (float*)scratch(1, 4ll * kb_up * crs);
  int* soff = (int*)scratch(2, 4ll * S);  // where window column s starts in a staged row
  for (int s = 0; s < S; ++s) soff[s] = (s * dil) % stride * jw + (s * dil) / stride;
  stage_input(x + (long long)n * C * H * W, C, H, W, h0, rows, stride, pad, jw, xt);
  stage_filters(w, K, crs, k0, kb, wt);

  for (int g = 0; g < kb; g += KR) {
    const float* wg = wt + (long long)g * crs;
    for (int p = 0; p < pb; ++p)
      for (int q0 = 0; q0 < Q; q0 += NR) {
        vf acc[KR][QV];
#pragma GCC unroll 16
        for (int i = 0; i < KR; ++i)
#pragma GCC unroll 8
          for (int v = 0; v < QV; ++v) acc[i][v] = vf{};
        const float* wp = wg;
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
        // Store the valid part: rows of filters < K, columns < Q.
        const int cols = Q - q0 < NR ? Q - q0 : NR;
        for (int i = 0; i < KR && g + i < kb; ++i) {
          T* yo = y + (((long long)n * K + k0 + g + i) * P + p0 + p) * Q + q0;
#if !defined(KF_DTYPE_FP16) && !defined(KF_DTYPE_BF16)
          if (cols == NR) {
#pragma GCC unroll 8
            for (int v = 0; v < QV; ++v) *(vf_unaligned*)(yo + v * VW) = acc[i][v];
            continue;
          }
#endif
          const float* row = (const float*)&acc[i][0];
          for (int j = 0; j < cols; ++j) yo[j] = from_f32(row[j]);
        }
      }
  }
}

KF_KERNEL(conv2d, conv2d_block)
