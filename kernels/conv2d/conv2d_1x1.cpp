// conv2d for the cpu backend, the 1x1 kernel (R = S = 1: ResNet's bottleneck and projection
// layers), picked by the library when R == S == 1.
// A 1x1 convolution is a GEMM per image: Y_n[K, P*Q] = W[K, C] x X_n[C, P*Q], where column
// j = p*Q + q of X_n is the input pixel (p*stride - pad, q*stride - pad), zero outside the image.
// With stride 1 and no padding X_n is the image itself; otherwise the columns are gathered while
// packing, so stride 2 (the downsampling projection) costs nothing extra in the micro-kernel.
// The same gather with a row per (c, r, s) is im2col, so the kernel is correct for any window
// (Y_n = W[K, C*R*S] x im2col(X_n)); only 1x1 is where it is the right plan.
// BLIS-style, as kernels/gemm/gemm.cpp: each block owns an MC x NC tile of Y_n; for each KC slice
// of the reduction it packs X_n's columns into NR-wide panels and W's rows into MR-tall panels
// (fp32, zero-padded), then a register-tiled micro-kernel accumulates MR x NR outputs in SIMD
// registers: per reduction step NV vector loads and MR broadcasts feed MR * NV FMAs. Vectors run
// along the flattened P*Q plane, so 14- and 7-wide images fill every lane.
//
// Parameters (all #defines):
//   MR       filters per micro-tile (accumulators: MR * NV vectors)
//   NV       SIMD vectors of output pixels per micro-tile; NR = NV * VW pixels
//   VW       SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   MC, NC   the block's tile of Y_n: MC filters x NC output pixels
//   KC       reduction steps (c, r, s) per slice (W panel MR*KC, X panel KC*NR in L1/L2)
#include <cstdlib>

#include "kernels/common/simd.hpp"  // VW, T, vf, scratch()
// Scratch slots: 0 X panels, 1 W panels, 2 fp32 partial sums, 3 column offsets.

#define NR (NV * VW)
#include "kernels/common/packed_tile.hpp"  // pack_a, micro_kernel

// 16-bit y cannot carry partial sums between channel slices (each store would round them):
// they stay in an fp32 tile of the block and y is written once, at the end.
#if defined(KF_DTYPE_FP16) || defined(KF_DTYPE_BF16)
#define KF_WIDE_PARTIALS 1
#endif

// Reduction rows e0..e0+kc-1 (e = (c*R + r)*S + s) of im2col(X_n)'s columns j0..j0+nc-1 ->
// panels of NR columns: Xp[panel][e][NR], zero past the last column. off[rs*nc + j] is where
// column j0+j reads for window tap rs in a channel plane (-1: padding); off == nullptr means
// the columns are the plane itself (1x1, stride 1, no padding).
static void pack_x(const T* x, long long plane, int RS, const int* off, int j0, int nc, int e0,
                   int kc, float* Xp) {
  for (int jp = 0; jp < nc; jp += NR) {
    float* dst = Xp + (long long)(jp / NR) * kc * NR;
    const int w = nc - jp < NR ? nc - jp : NR;
    for (int e = 0; e < kc; ++e) {
      const int c = (e0 + e) / RS, rs = (e0 + e) % RS;
      const T* src = x + c * plane;
      float* d = dst + (long long)e * NR;
      if (!off) {
        for (int j = 0; j < w; ++j) d[j] = to_f32(src[j0 + jp + j]);
      } else {
        const int* o = off + (long long)rs * nc + jp;
        for (int j = 0; j < w; ++j) d[j] = o[j] >= 0 ? to_f32(src[o[j]]) : 0.0f;
      }
      for (int j = w; j < NR; ++j) d[j] = 0.0f;
    }
  }
}

// Add (or, for the first slice, store) a rows x cols tile of acc at Y (leading dimension ld).
template <class D>
static inline void add_tile(D* Y, long long ld, int rows, int cols, vf acc[MR][NV], bool first) {
  if constexpr (sizeof(D) == 4) {
    if (rows == MR && cols == NR) {
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
          vf_unaligned* y = (vf_unaligned*)(Y + i * ld + v * VW);
          *y = first ? acc[i][v] : *y + acc[i][v];
        }
      return;
    }
  }
  for (int i = 0; i < rows; ++i) {
    const float* row = (const float*)&acc[i][0];
    D* y = Y + i * ld;
    for (int j = 0; j < cols; ++j) y[j] = first ? row[j] : y[j] + row[j];
  }
}

static void conv2d_1x1_block(const kf_ctx& ctx, const T* x, const T* w, T* y, int N, int C, int H,
                             int W, int K, int R, int S, int stride, int pad, int dil) {
  (void)N;
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1, PQ = P * Q;
  const int j0 = (int)ctx.block_idx.x * NC, m0 = (int)ctx.block_idx.y * MC, n = (int)ctx.block_idx.z;
  const int nc = PQ - j0 < NC ? PQ - j0 : NC, mc = K - m0 < MC ? K - m0 : MC;
  const int RS = R * S, crs = C * RS, kc_max = crs < KC ? crs : KC;
  float* Xp = (float*)scratch(0, 4ll * kc_max * ((nc + NR - 1) / NR) * NR);
  float* Wp = (float*)scratch(1, 4ll * kc_max * ((mc + MR - 1) / MR) * MR);
  // Where each of the block's columns reads in a channel plane, per window tap, unless the
  // columns are the plane itself.
  int* off = nullptr;
  if (RS != 1 || stride != 1 || pad != 0) {
    off = (int*)scratch(3, 4ll * RS * nc);
    for (int rs = 0; rs < RS; ++rs)
      for (int j = 0; j < nc; ++j) {
        const int p = (j0 + j) / Q, q = (j0 + j) % Q;
        const int h = p * stride - pad + rs / S * dil, v = q * stride - pad + rs % S * dil;
        off[rs * nc + j] = h >= 0 && h < H && v >= 0 && v < W ? h * W + v : -1;
      }
  }
  const T* xn = x + (long long)n * C * H * W;
#ifdef KF_WIDE_PARTIALS
  float* Yb = (float*)scratch(2, 4ll * mc * nc);  // the block's tile, fp32, leading dim nc
  const long long ld = nc;
#else
  T* Yb = y + ((long long)n * K + m0) * PQ + j0;  // the block's tile of y itself
  const long long ld = PQ;
#endif
  for (int e0 = 0; e0 < crs; e0 += KC) {
    const int kc = crs - e0 < KC ? crs - e0 : KC;
    pack_x(xn, (long long)H * W, RS, off, j0, nc, e0, kc, Xp);
    pack_a(w, crs, m0, mc, e0, kc, Wp);  // W as K x C*R*S
    for (int jp = 0; jp < nc; jp += NR) {
      const float* xp = Xp + (long long)(jp / NR) * kc * NR;
      for (int i0 = 0; i0 < mc; i0 += MR) {
        vf acc[MR][NV];
        micro_kernel(kc, Wp + (long long)(i0 / MR) * kc * MR, xp, acc);
        const int rows = mc - i0 < MR ? mc - i0 : MR, cols = nc - jp < NR ? nc - jp : NR;
        add_tile(Yb + i0 * ld + jp, ld, rows, cols, acc, e0 == 0);
      }
    }
  }
#ifdef KF_WIDE_PARTIALS
  for (int i = 0; i < mc; ++i)
    for (int j = 0; j < nc; ++j)
      y[((long long)n * K + m0 + i) * PQ + j0 + j] = from_f32(Yb[(long long)i * nc + j]);
#endif
}

KF_KERNEL(conv2d_1x1, conv2d_1x1_block)
