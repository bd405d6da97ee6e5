// The register-tiled product the dense cpu kernels share (gemm; conv2d's 1x1 kernel, whose
// filters are a row-major matrix), included after kernels/common/simd.hpp: the rows of A packed
// into panels of MR, and the micro-kernel that multiplies a packed A panel by a packed panel of
// NR columns in registers. Needs MR, NV, NR (= NV * VW); MK_UNROLL (the micro-kernel's k-loop
// unroll, 4 unless the kernel sets it).
#ifndef MK_UNROLL
#define MK_UNROLL 4
#endif
#define KF_STR(x) #x
#define KF_UNROLL(n) _Pragma(KF_STR(GCC unroll n))

// fp32 A is packed 8 k-steps at a time with transpose8() (kernels/common/transpose8.hpp). The
// scalar copy it replaces did one load and one scattered 4-byte store per element (about 4% of
// gemm's time at 2048^3). Where the dtype is 16 bits the copy converts as it goes and stays
// scalar. PACK_V 0 keeps the scalar copy: not a spec parameter, add `"PACK_V": [0, 1]` to a
// spec to measure one against the other.
#ifndef PACK_V
#define PACK_V 1
#endif
#if PACK_V && !defined(KF_DTYPE_FP16) && !defined(KF_DTYPE_BF16)
#define KF_PACK_A_VECTOR 1
#include "kernels/common/transpose8.hpp"  // transpose8, kf_v8
#endif

// A[m0:m0+mc, k0:k0+kc] (leading dimension lda) -> panels of MR rows: Ap[panel][k][MR], zero
// beyond row mc.
static void pack_a(const T* A, long long lda, int m0, int mc, int k0, int kc, float* Ap) {
  for (int i0 = 0; i0 < mc; i0 += MR) {
    float* dst = Ap + (long long)(i0 / MR) * kc * MR;
    const int h = mc - i0 < MR ? mc - i0 : MR;
    const T* src = A + (long long)(m0 + i0) * lda + k0;
    // The rows of the next panel are prefetched while this one is copied: A's rows lie lda
    // apart (a page apart or more at large K), where the hardware prefetcher, which stays within
    // a page, starts cold on each; without this, packing A was a fifth of gemm's time at 2048^3.
    const int h_next = mc - i0 - MR < MR ? mc - i0 - MR : MR;
    int k = 0;
#ifdef KF_PACK_A_VECTOR
    for (; k + 8 <= kc; k += 8) {
      if ((k & 15) == 0)
        for (int i = 0; i < h_next; ++i) __builtin_prefetch(src + (MR + i) * lda + k);
#pragma GCC unroll 2
      for (int g = 0; g < MR; g += 8) {  // rows g .. g+7 of the panel (MR up to 16)
        kf_v8 r[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) r[i] = g + i < h ? *(const kf_v8_unaligned*)(src + (g + i) * lda + k) : kf_v8{};
        transpose8(r);
        const int w = MR - g < 8 ? MR - g : 8;
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) __builtin_memcpy(dst + (k + j) * MR + g, &r[j], w * sizeof(float));
      }
    }
#else
    for (int i = 0; i < h_next; ++i)
      for (int kk = 0; kk < kc; kk += 64 / (int)sizeof(T)) __builtin_prefetch(src + (MR + i) * lda + kk);
#endif
    for (int i = 0; i < h; ++i)
      for (int kk = k; kk < kc; ++kk) dst[kk * MR + i] = to_f32(src[i * lda + kk]);
    for (int i = h; i < MR; ++i)
      for (int kk = k; kk < kc; ++kk) dst[kk * MR + i] = 0.0f;
  }
}

// acc = an A panel (kc x MR) times a B panel (kc x NR), in registers.
static inline void micro_kernel(int kc, const float* __restrict a, const float* __restrict b,
                                vf acc[MR][NV]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = vf{};
  KF_UNROLL(MK_UNROLL)
  for (int k = 0; k < kc; ++k) {
    vf bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = *(const vf*)(b + k * NR + v * VW);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float ai = a[k * MR + i];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] += ai * bv[v];
    }
  }
}

// The C tile the micro-kernel is about to update (rows of NR floats, ld apart), asked for (for
// writing) before the KC-long product starts, so that its cache misses overlap the FMAs instead
// of stalling the store after them: C is larger than L2, and its lines were last touched a
// whole B slice ago (or never).
static inline void prefetch_tile(const T* C, long long ld, int rows) {
  for (int i = 0; i < rows; ++i) {
    __builtin_prefetch(C + (long long)i * ld, 1);
    __builtin_prefetch(C + (long long)i * ld + NR - 1, 1);
  }
}

// Which rows of the product a block owns. The grid's y is an upper bound: only G of its rows of
// blocks get rows, as few as keep every thread busy (at least two blocks per thread where M
// allows, counting the grid's x and z), each a run of whole MR panels that the block walks in
// MC-row sub-blocks. The B (packed columns) slice is packed once per run and reused by every
// sub-block: with one MC-row block per task it was packed ceil(M/MC) times in all (22 times at
// gemm 2048^3; 11 times at conv2d's ResNet conv4_x 1x1), with runs G times.
struct RowRun {
  int r0, r1;  // rows [r0, r1); empty when r0 >= r1
};
static inline RowRun row_run(const kf_ctx& ctx, int M) {
  const long long gx = (long long)ctx.grid_dim.x * ctx.grid_dim.z, want = 2LL * ctx.workers;
  long long G = (want + gx - 1) / gx;
  G = G < ctx.grid_dim.y ? G : ctx.grid_dim.y;
  G = G < 1 ? 1 : G;
  const long long panels = (M + MR - 1) / MR, per = (panels + G - 1) / G * MR;
  const long long r0 = ctx.block_idx.y * per, r1 = r0 + per < M ? r0 + per : M;
  return {(int)(r0 < M ? r0 : M), (int)r1};
}
