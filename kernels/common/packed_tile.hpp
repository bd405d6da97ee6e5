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

// A[m0:m0+mc, k0:k0+kc] (leading dimension lda) -> panels of MR rows: Ap[panel][k][MR], zero
// beyond row mc.
static void pack_a(const T* A, long long lda, int m0, int mc, int k0, int kc, float* Ap) {
  for (int i0 = 0; i0 < mc; i0 += MR) {
    float* dst = Ap + (long long)(i0 / MR) * kc * MR;
    const int h = mc - i0 < MR ? mc - i0 : MR;
    // The rows of the next panel are prefetched while this one is copied: A's rows lie lda
    // apart (a page apart or more at large K), where the hardware prefetcher, which stays within
    // a page, starts cold on each; without this, packing A was a fifth of gemm's time at 2048^3.
    const int h_next = mc - i0 - MR < MR ? mc - i0 - MR : MR;
    for (int i = 0; i < h; ++i) {
      const T* src = A + (long long)(m0 + i0 + i) * lda + k0;
      if (i < h_next)
        for (int k = 0; k < kc; k += 64 / (int)sizeof(T)) __builtin_prefetch(src + MR * lda + k);
      for (int k = 0; k < kc; ++k) dst[k * MR + i] = to_f32(src[k]);
    }
    for (int i = h; i < MR; ++i)
      for (int k = 0; k < kc; ++k) dst[k * MR + i] = 0.0f;
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
