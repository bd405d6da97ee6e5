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
#include "kernels/common/packed_tile.hpp"  // pack_a, micro_kernel, prefetch_tile, row_run

// PFY 1: each micro-tile's lines of y are prefetched for writing before its product (as gemm's
// C tile). Not a spec parameter: add `"PFY": [0, 1]` to the spec to measure one against the other.
#ifndef PFY
#define PFY 1
#endif
// RUNS 1: a block walks a run of the filters (row_run), X_n packed once per run; 0: one MC-filter
// block per grid row, X_n packed ceil(K/MC) times (the plan before). Not a spec parameter either.
#ifndef RUNS
#define RUNS 1
#endif

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

// Store (the first slice) or add a rows x cols tile of acc at Y (leading dimension ld). The
// first slice never reads y: its lines are not in any cache, and a read of them (y + acc
// blended with acc) would stall on memory where a store only needs the line's ownership.
template <class D>
static inline void add_tile(D* Y, long long ld, int rows, int cols, vf acc[MR][NV], bool first) {
  if constexpr (sizeof(D) == 4) {
    if (rows == MR && cols == NR) {
      if (first) {
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) *(vf_unaligned*)(Y + i * ld + v * VW) = acc[i][v];
      } else {
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) {
            vf_unaligned* y = (vf_unaligned*)(Y + i * ld + v * VW);
            *y = *y + acc[i][v];
          }
      }
      return;
    }
  }
  for (int i = 0; i < rows; ++i) {
    const float* row = (const float*)&acc[i][0];
    D* y = Y + i * ld;
    if (first)
      for (int j = 0; j < cols; ++j) y[j] = row[j];
    else
      for (int j = 0; j < cols; ++j) y[j] += row[j];
  }
}

// A block owns NC output pixels of one image and a run of the filters (row_run: as few runs as
// keep the threads busy), walked in MC-filter sub-blocks: X_n's slice is packed once per run,
// not once per MC filters (11 times at ResNet conv4_x 1x1, K = 1024, with one block per MC).
static void conv2d_1x1_block(const kf_ctx& ctx, const T* x, const T* w, T* y, int N, int C, int H,
                             int W, int K, int R, int S, int stride, int pad, int dil) {
  (void)N;
  RowRun run = row_run(ctx, K);  // filters [run.r0, run.r1)
  if (!RUNS) {
    const int r0 = (int)ctx.block_idx.y * MC;
    run = {r0 < K ? r0 : K, K - r0 < MC ? K : r0 + MC};
  }
  if (run.r0 >= run.r1) return;
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1, PQ = P * Q;
  const int j0 = (int)ctx.block_idx.x * NC, n = (int)ctx.block_idx.z;
  const int nc = PQ - j0 < NC ? PQ - j0 : NC, kr = run.r1 - run.r0;
  const int RS = R * S, crs = C * RS, kc_max = crs < KC ? crs : KC;
  float* Xp = (float*)scratch(0, 4ll * kc_max * ((nc + NR - 1) / NR) * NR);
  float* Wp = (float*)scratch(1, 4ll * kc_max * ((MC + MR - 1) / MR) * MR);
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
  float* Yb = (float*)scratch(2, 4ll * kr * nc);  // the run's tile, fp32, leading dim nc
  const long long ld = nc;
#else
  T* Yb = y + ((long long)n * K + run.r0) * PQ + j0;  // the run's tile of y itself
  const long long ld = PQ;
#endif
  for (int e0 = 0; e0 < crs; e0 += KC) {
    const int kc = crs - e0 < KC ? crs - e0 : KC;
    pack_x(xn, (long long)H * W, RS, off, j0, nc, e0, kc, Xp);
    for (int m0 = run.r0; m0 < run.r1; m0 += MC) {
      const int mc = run.r1 - m0 < MC ? run.r1 - m0 : MC;
      pack_a(w, crs, m0, mc, e0, kc, Wp);  // W as K x C*R*S
      for (int jp = 0; jp < nc; jp += NR) {
        const float* xp = Xp + (long long)(jp / NR) * kc * NR;
        for (int i0 = 0; i0 < mc; i0 += MR) {
          const int rows = mc - i0 < MR ? mc - i0 : MR, cols = nc - jp < NR ? nc - jp : NR;
          auto* Yt = Yb + (m0 - run.r0 + i0) * ld + jp;
#ifndef KF_WIDE_PARTIALS
          if (PFY) prefetch_tile(Yt, ld, rows);
#endif
          vf acc[MR][NV];
          micro_kernel(kc, Wp + (long long)(i0 / MR) * kc * MR, xp, acc);
          add_tile(Yt, ld, rows, cols, acc, e0 == 0);
        }
      }
    }
  }
#ifdef KF_WIDE_PARTIALS
  for (int i = 0; i < kr; ++i)
    for (int j = 0; j < nc; ++j)
      y[((long long)n * K + run.r0 + i) * PQ + j0 + j] = from_f32(Yb[(long long)i * nc + j]);
#endif
}

KF_KERNEL(conv2d_1x1, conv2d_1x1_block)
