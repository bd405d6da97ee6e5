// gemm for the cpu backend: C = alpha*A*B + beta*C, row-major, any M, N, K.
// BLIS-style: each block owns an (MC x NC) tile of C; for each KC-slice of the reduction it packs
// B into NR-wide column panels and A into MR-tall row panels (zero-padded, converted to fp32),
// then a register-tiled micro-kernel accumulates MR x NR results in SIMD registers.
//
// Parameters (all #defines):
//   MR       rows of the micro-tile (accumulator registers: MR * NV)
//   NV       SIMD vectors per micro-tile row; NR = NV * VW columns
//   VW       SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   MC, NC   the block's tile of C (kept in L2 / L3)
//   KC       reduction slice (A panel MR*KC and B panel KC*NR stay in L1/L2)
//   UNROLL   unroll factor of the micro-kernel's k loop
#include <cstdlib>
#include <cstring>

#if VW == 0
#undef VW
#if defined(__AVX512F__)
#define VW 16
#else
#define VW 8
#endif
#endif
#define NR (NV * VW)
#define KF_STR(x) #x
#define KF_UNROLL(n) _Pragma(KF_STR(GCC unroll n))

// The dtype's storage and its conversions (src/backend/cpu/prelude.hpp).
typedef kf_storage T;
static inline float to_f32(T x) { return kf_to_f32(x); }
static inline T from_f32(float f) { return kf_from_f32(f); }

typedef float vf __attribute__((vector_size(VW * 4)));
typedef float vf_unaligned __attribute__((vector_size(VW * 4), aligned(4)));

// 16-bit C cannot carry partial sums between KC-slices (each store would round them to 8 or 11
// bits): they stay in an fp32 tile of the block and C is written once, at the end.
#if defined(KF_DTYPE_FP16) || defined(KF_DTYPE_BF16)
#define KF_WIDE_PARTIALS 1
#endif

// Per-thread scratch (0: B panels, 1: A panels, 2: fp32 partial sums), allocated once per thread
// at the largest size used.
static float* scratch(int which, long long floats) {
  static thread_local float* buf[3] = {nullptr, nullptr, nullptr};
  static thread_local long long cap[3] = {0, 0, 0};
  if (cap[which] < floats) {
    std::free(buf[which]);
    buf[which] = static_cast<float*>(std::aligned_alloc(64, ((floats * 4 + 63) / 64) * 64));
    cap[which] = floats;
  }
  return buf[which];
}

// B[k0:k0+kc, n0:n0+nc] -> panels of NR columns: Bp[panel][k][NR], zero beyond N.
static void pack_b(const T* B, int N, int k0, int kc, int n0, int nc, float* Bp) {
  for (int j0 = 0; j0 < nc; j0 += NR) {
    float* dst = Bp + (long long)(j0 / NR) * kc * NR;
    const int w = nc - j0 < NR ? nc - j0 : NR;
    for (int k = 0; k < kc; ++k) {
      const T* src = B + (long long)(k0 + k) * N + n0 + j0;
      float* d = dst + (long long)k * NR;
      for (int j = 0; j < w; ++j) d[j] = to_f32(src[j]);
      for (int j = w; j < NR; ++j) d[j] = 0.0f;
    }
  }
}

// A[m0:m0+mc, k0:k0+kc] -> panels of MR rows: Ap[panel][k][MR], zero beyond M.
static void pack_a(const T* A, int K, int m0, int mc, int k0, int kc, float* Ap) {
  for (int i0 = 0; i0 < mc; i0 += MR) {
    float* dst = Ap + (long long)(i0 / MR) * kc * MR;
    const int h = mc - i0 < MR ? mc - i0 : MR;
    for (int i = 0; i < h; ++i) {
      const T* src = A + (long long)(m0 + i0 + i) * K + k0;
      for (int k = 0; k < kc; ++k) dst[k * MR + i] = to_f32(src[k]);
    }
    for (int i = h; i < MR; ++i)
      for (int k = 0; k < kc; ++k) dst[k * MR + i] = 0.0f;
  }
}

// acc = Ap panel (kc x MR) times Bp panel (kc x NR), in registers.
static inline void micro_kernel(int kc, const float* __restrict a, const float* __restrict b,
                                vf acc[MR][NV]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = vf{} ;
  KF_UNROLL(UNROLL)
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

#ifndef KF_WIDE_PARTIALS
// C tile (rows x cols at C) = first ? alpha*acc + beta*C : C + alpha*acc. With beta == 0 the old
// C is never read (it may hold anything, even NaN).
static inline void store_tile(T* C, int N, int rows, int cols, vf acc[MR][NV], float alpha,
                              float beta, bool first) {
  const float keep = first ? beta : 1.0f;
  if (rows == MR && cols == NR) {
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) {
        vf_unaligned* c = (vf_unaligned*)(C + (long long)i * N + v * VW);
        *c = keep == 0.0f ? alpha * acc[i][v] : keep * *c + alpha * acc[i][v];
      }
    return;
  }
  for (int i = 0; i < rows; ++i) {
    const float* row = (const float*)&acc[i][0];
    T* c = C + (long long)i * N;
    for (int j = 0; j < cols; ++j) c[j] = keep == 0.0f ? alpha * row[j] : keep * c[j] + alpha * row[j];
  }
}
#else
// Partial sums (rows x cols at P, leading dimension ld) = first ? acc : P + acc.
static inline void add_partials(float* P, int ld, int rows, int cols, vf acc[MR][NV], bool first) {
  for (int i = 0; i < rows; ++i) {
    const float* row = (const float*)&acc[i][0];
    float* p = P + (long long)i * ld;
    for (int j = 0; j < cols; ++j) p[j] = first ? row[j] : p[j] + row[j];
  }
}

// C block = alpha*P + beta*C, rounded once to 16 bits; C is not read when beta == 0.
static void store_block(T* C, int N, int mc, int nc, const float* P, float alpha, float beta) {
  for (int i = 0; i < mc; ++i)
    for (int j = 0; j < nc; ++j) {
      const float r = alpha * P[(long long)i * nc + j];
      T* c = C + (long long)i * N + j;
      *c = from_f32(beta == 0.0f ? r : beta * to_f32(*c) + r);
    }
}
#endif

static void gemm_block(const kf_ctx& ctx, const T* A, const T* B, T* C, int M, int N, int K,
                       float alpha, float beta) {
  const int n0 = (int)ctx.block_idx.x * NC, m0 = (int)ctx.block_idx.y * MC;
  const int nc = N - n0 < NC ? N - n0 : NC, mc = M - m0 < MC ? M - m0 : MC;
  const int kc_max = K < KC ? K : KC;
  float* Bp = scratch(0, (long long)kc_max * ((nc + NR - 1) / NR) * NR);
  float* Ap = scratch(1, (long long)kc_max * ((mc + MR - 1) / MR) * MR);
#ifdef KF_WIDE_PARTIALS
  float* P = scratch(2, (long long)mc * nc);
#endif
  for (int k0 = 0; k0 < K; k0 += KC) {
    const int kc = K - k0 < KC ? K - k0 : KC;
    pack_b(B, N, k0, kc, n0, nc, Bp);
    pack_a(A, K, m0, mc, k0, kc, Ap);
    for (int j0 = 0; j0 < nc; j0 += NR) {
      const float* bp = Bp + (long long)(j0 / NR) * kc * NR;
      for (int i0 = 0; i0 < mc; i0 += MR) {
        vf acc[MR][NV];
        micro_kernel(kc, Ap + (long long)(i0 / MR) * kc * MR, bp, acc);
        const int rows = mc - i0 < MR ? mc - i0 : MR, cols = nc - j0 < NR ? nc - j0 : NR;
#ifdef KF_WIDE_PARTIALS
        add_partials(P + (long long)i0 * nc + j0, nc, rows, cols, acc, k0 == 0);
#else
        store_tile(C + (long long)(m0 + i0) * N + n0 + j0, N, rows, cols, acc, alpha, beta, k0 == 0);
#endif
      }
    }
  }
#ifdef KF_WIDE_PARTIALS
  store_block(C + (long long)m0 * N + n0, N, mc, nc, P, alpha, beta);
#endif
}

KF_KERNEL(gemm, gemm_block)
