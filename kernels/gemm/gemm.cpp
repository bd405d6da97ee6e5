// gemm for the cpu backend: C = alpha*A*B + beta*C, row-major, any M, N, K.
// BLIS-style: each block owns NC columns of C and a run of its rows (row_run: as few runs as
// keep the threads busy); for each KC-slice of the reduction it packs B's slice once into
// NR-wide column panels, then walks its rows in MC-row sub-blocks, packing A into MR-tall row
// panels (zero-padded, converted to fp32), and a register-tiled micro-kernel accumulates
// MR x NR results in SIMD registers.
//
// Parameters (all #defines):
//   MR       rows of the micro-tile (accumulator registers: MR * NV)
//   NV       SIMD vectors per micro-tile row; NR = NV * VW columns
//   VW       SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   MC       rows of a sub-block: the packed A block MC x KC (kept in L2)
//   NC       columns of a block: the packed B slice KC x NC (L2 / L3)
//   KC       reduction slice (A panel MR*KC and B panel KC*NR stay in L1/L2)
//   UNROLL   unroll factor of the micro-kernel's k loop
//   PACK_A   1: A always packed; 2: read in place where a block has at most 128 columns
//
// bf16 where the CPU has AVX-512 BF16 (vdpbf16ps: acc += a0*b0 + a1*b1 per fp32 lane, on pairs
// of bf16): the panels keep bf16 and interleave each pair of k (Bq[panel][k/2][NR] and
// Aq[panel][k/2][MR], 32 bits per pair), the micro-kernel does one dot-product instruction per
// accumulator and pair, and the partial sums stay fp32 until C is rounded once. Twice the fp32
// FMA's work per instruction, half the bytes packed. The instruction treats subnormal inputs and
// results as zero (DAZ, FTZ: Intel's definition, whatever MXCSR says), which the error bound
// does not allow where products fall below fp32's normal range, so a KC-slice whose smallest
// possible product could (packing reads every exponent) takes the exact fp32 path instead.
// Without AVX-512 BF16 (-march=x86-64-v3, or an AVX-512 CPU before Cooper Lake / Zen 4) bf16
// always takes the fp32 path.
#include <cstdlib>
#include <cstring>

#include "kernels/common/simd.hpp"  // VW, T, vf, scratch()
// Scratch slots: 0 B panels, 1 A panels, 2 fp32 partial sums, 3 and 4 the bf16 pair panels of B and A.

#define NR (NV * VW)
#define MK_UNROLL UNROLL
#include "kernels/common/packed_tile.hpp"  // pack_a, micro_kernel

#if defined(KF_DTYPE_BF16) && defined(__AVX512BF16__) && (VW == 16 || (VW == 8 && defined(__AVX512VL__)))
#define KF_BF16_DOT 1
#include <immintrin.h>  // only here: it costs every other kernel's compile half a second
#endif

// 16-bit C cannot carry partial sums between KC-slices (each store would round them to 8 or 11
// bits): they stay in an fp32 tile of the block and C is written once, at the end.
#if defined(KF_DTYPE_FP16) || defined(KF_DTYPE_BF16)
#define KF_WIDE_PARTIALS 1
#endif

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

#ifdef KF_BF16_DOT
typedef unsigned vu32 __attribute__((vector_size(VW * 4)));                  // VW pairs of bf16
typedef unsigned short vu16 __attribute__((vector_size(VW * 2)));
typedef unsigned short vu16_unaligned __attribute__((vector_size(VW * 2), aligned(2)));

// The smallest product the dot path may meet: below 2^-102 a flushed partial sum could exceed
// the error bound (n flushes of < 2^-126 each against gamma_n * |a*b| >= n * 2^-24 * 2^-102).
// In biased exponents: e_a + e_b - 254 >= -102.
constexpr unsigned kDotMinExponentSum = 152;

// A key per bf16 whose minimum is 128 x the smallest biased exponent among the nonzero values:
// a subnormal's exponent field is 0, a zero counts as the largest (nothing of it can be lost).
static inline unsigned short exponent_key(unsigned short x) {
  return (x & 0x7fff) == 0 ? 0x7f80 : (x & 0x7f80);
}
static inline vu16 exponent_keys(vu16 x) {
  return (x & 0x7fff) == 0 ? (vu16{} + 0x7f80) : (x & 0x7f80);
}

// acc += a0*b0 + a1*b1 lane by lane, in fp32, one instruction.
static inline vf dot2(vf acc, vu32 a, vu32 b) {
#if VW == 16
  return (vf)_mm512_dpbf16_ps((__m512)acc, (__m512bh)a, (__m512bh)b);
#else
  return (vf)_mm256_dpbf16_ps((__m256)acc, (__m256bh)a, (__m256bh)b);
#endif
}

// B[k0:k0+kc, n0:n0+nc] -> Bq[panel][k/2][NR]: element j of a pair row holds B[k][j] in its low
// half and B[k+1][j] in its high half (0 past K and past N). Returns the smallest exponent key.
static unsigned pack_b_dot(const T* B, int N, int k0, int kc, int n0, int nc, unsigned* Bq) {
  const int kp = (kc + 1) / 2;
  vu16 lo = vu16{} + 0x7f80;
  unsigned short lo_tail = 0x7f80;
  for (int j0 = 0; j0 < nc; j0 += NR) {
    unsigned* dst = Bq + (long long)(j0 / NR) * kp * NR;
    const int w = nc - j0 < NR ? nc - j0 : NR;
    for (int p = 0; p < kp; ++p) {
      const T* r0 = B + (long long)(k0 + 2 * p) * N + n0 + j0;
      const bool pair = 2 * p + 1 < kc;  // an odd slice's last k has no partner: 0
      unsigned* d = dst + (long long)p * NR;
      int j = 0;
      for (; j + VW <= w; j += VW) {
        const vu16 x0 = *(const vu16_unaligned*)(r0 + j);
        const vu16 x1 = pair ? *(const vu16_unaligned*)(r0 + N + j) : vu16{};
        *(vu32*)(d + j) = __builtin_convertvector(x0, vu32) | __builtin_convertvector(x1, vu32) << 16;
        const vu16 k = exponent_keys(x0) < exponent_keys(x1) ? exponent_keys(x0) : exponent_keys(x1);
        lo = k < lo ? k : lo;
      }
      for (; j < w; ++j) {
        const unsigned short x0 = r0[j], x1 = pair ? r0[N + j] : 0;
        d[j] = x0 | (unsigned)x1 << 16;
        const unsigned short k = exponent_key(x0) < exponent_key(x1) ? exponent_key(x0) : exponent_key(x1);
        lo_tail = k < lo_tail ? k : lo_tail;
      }
      for (; j < NR; ++j) d[j] = 0;
    }
  }
  for (int e = 0; e < VW; ++e) lo_tail = lo[e] < lo_tail ? lo[e] : lo_tail;
  return lo_tail;
}

// A[m0:m0+mc, k0:k0+kc] -> Aq[panel][k/2][MR]: A[i][k] and A[i][k+1], adjacent in memory, as one
// 32-bit pair (0 past K and past M). Returns the smallest exponent key.
static unsigned pack_a_dot(const T* A, int K, int m0, int mc, int k0, int kc, unsigned* Aq) {
  const int kp = (kc + 1) / 2;
  unsigned short lo = 0x7f80;
  for (int i0 = 0; i0 < mc; i0 += MR) {
    unsigned* dst = Aq + (long long)(i0 / MR) * kp * MR;
    const int h = mc - i0 < MR ? mc - i0 : MR;
    for (int i = 0; i < h; ++i) {
      const T* src = A + (long long)(m0 + i0 + i) * K + k0;
      for (int p = 0; p < kp; ++p) {
        const unsigned short x0 = src[2 * p], x1 = 2 * p + 1 < kc ? src[2 * p + 1] : 0;
        dst[p * MR + i] = x0 | (unsigned)x1 << 16;
        const unsigned short k = exponent_key(x0) < exponent_key(x1) ? exponent_key(x0) : exponent_key(x1);
        lo = k < lo ? k : lo;
      }
    }
    for (int i = h; i < MR; ++i)
      for (int p = 0; p < kp; ++p) dst[p * MR + i] = 0;
  }
  return lo;
}

// acc = Aq panel (kp pairs x MR) times Bq panel (kp pairs x NR): per pair of k, NV loads of b and
// per row one broadcast of its two a values, then one dot-product instruction per accumulator.
static inline void micro_kernel_dot(int kp, const unsigned* __restrict a, const unsigned* __restrict b,
                                    vf acc[MR][NV]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = vf{};
  KF_UNROLL(UNROLL)
  for (int k = 0; k < kp; ++k) {
    vu32 bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = *(const vu32*)(b + k * NR + v * VW);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const vu32 ai = vu32{} + a[k * MR + i];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = dot2(acc[i][v], ai, bv[v]);
    }
  }
}
#endif

// PACK_A 2 (fp32 only): where a block has at most kUnpackedMaxColumns columns, the micro-kernel
// broadcasts A's elements from A itself, MR rows lda apart, instead of from a packed copy; 1:
// always packed. A broadcast costs the same from either; what packing buys (one contiguous
// stream, no page per row) matters less than its cost, one load and one scattered store per
// element of A per block column, where few FLOPs follow each packed element (8192x64x1024: 128).
// The MR rows' KC columns (MR*KC*4 bytes) stay in L1 across the block's B panels.
#ifndef PACK_A
#define PACK_A 2
#endif
#if PACK_A == 2 && !defined(KF_DTYPE_FP16) && !defined(KF_DTYPE_BF16)
#define KF_UNPACKED_A 1
constexpr int kUnpackedMaxColumns = 128;
// pf: the next A panel (or null), whose rows are prefetched one line per row every 16 k-steps,
// spread over this product: A's rows are lda apart and, at tall-skinny shapes, come from memory.
static inline void micro_kernel_rows(int kc, const float* __restrict a, long long lda, const float* __restrict b,
                                     vf acc[MR][NV], const float* pf) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = vf{};
  KF_UNROLL(MK_UNROLL)
  for (int k = 0; k < kc; ++k) {
    if (pf && (k & 15) == 0)
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) __builtin_prefetch(pf + i * lda + k);
    vf bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = *(const vf*)(b + k * NR + v * VW);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float ai = a[i * lda + k];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] += ai * bv[v];
    }
  }
}
#else
#define KF_UNPACKED_A 0
#endif

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
  if (cols == NR) {  // whole vectors
    for (int i = 0; i < rows; ++i)
      for (int v = 0; v < NV; ++v) {
        vf_unaligned* p = (vf_unaligned*)(P + (long long)i * ld + v * VW);
        *p = first ? acc[i][v] : *p + acc[i][v];
      }
    return;
  }
  for (int i = 0; i < rows; ++i) {
    const float* row = (const float*)&acc[i][0];
    float* p = P + (long long)i * ld;
    for (int j = 0; j < cols; ++j) p[j] = first ? row[j] : p[j] + row[j];
  }
}

// C block = alpha*P + beta*C, rounded once to 16 bits; C is not read when beta == 0. Whole
// vectors through the prelude's kf_load / kf_store (the same rounding as kf_from_f32).
typedef float wide_unaligned __attribute__((vector_size(KF_VW * 4), aligned(4)));
static void store_block(T* C, int N, int mc, int nc, const float* P, float alpha, float beta) {
  for (int i = 0; i < mc; ++i) {
    T* c = C + (long long)i * N;
    const float* p = P + (long long)i * nc;
    int j = 0;
    if (beta == 0.0f)
      for (; j + KF_VW <= nc; j += KF_VW) kf_store(c + j, alpha * *(const wide_unaligned*)(p + j));
    else
      for (; j + KF_VW <= nc; j += KF_VW)
        kf_store(c + j, beta * kf_load(c + j) + alpha * *(const wide_unaligned*)(p + j));
    for (; j < nc; ++j) {
      const float r = alpha * p[j];
      c[j] = from_f32(beta == 0.0f ? r : beta * to_f32(c[j]) + r);
    }
  }
}
#endif

// Which rows a block owns: row_run (kernels/common/packed_tile.hpp). The grid's y is ceil(M/MC),
// but up to 8 where M has that many MR panels, so that small M still splits; only as many runs
// as keep the threads busy get rows (B packed G times at 2048^3, not 22).

// The micro-tiles of one MC x KC block of A times the packed KC x NC slice of B, A panel outer:
// one KC x MR panel of A, the broadcast operand (6 KiB at the defaults), stays in L1 while the
// B panels stream from L2. (B panel outer, the order before, measured the same within the
// noise of a loaded host at 2048^3, one thread.)
#define KF_FOR_TILES(mc, nc)                    \
  for (int i0 = 0; i0 < (mc); i0 += MR)         \
    for (int j0 = 0; j0 < (nc); j0 += NR)

// The depth of the reduction slices: as few as KC allows (ceil(K/KC)), of equal depth rounded up
// to 8 (whole transposes in pack_a), so that K = KC + 1 takes two slices of about KC/2, not a full
// one and a slice of one k whose tiles are all store and no arithmetic. KBAL 0: slices of KC and a
// remainder (not a spec parameter: add `"KBAL": [0, 1]` to gemm_cpu.json to measure the two).
#ifndef KBAL
#define KBAL 1
#endif
static inline int slice_depth(int K) {
  if (!KBAL || K <= KC) return KC;
  const int slices = (K + KC - 1) / KC, even = (K + slices - 1) / slices;
  return (even + 7) / 8 * 8;  // <= KC: KC is a multiple of 8
}

// KF_ABLATE (not a spec parameter; 0, the default, compiles all of this away): phases taken out
// to measure what each costs (bench/kernel_phases, issue 25). The results are then wrong on
// purpose; only the fp32 path has the hooks. Bits:
//   1  no packing: a thread packs B's slice and A's block the first time it runs a block and
//      never again; every later product reads those panels (same sizes, same cache levels)
//   2  no C traffic: tiles are stored (same instructions, read-modify-write after the first
//      slice) to a per-thread scratch tile in L1 instead of C, and C is not prefetched
//   4  L1 panels: every tile multiplies A's panel 0 by B's panel 0 (22 KiB, L1-resident)
//   8  L2 panels: B's panel index modulo 8 (a 128 KiB window of the slice, L2-resident)
//  16  as 1, for A only;  32  as 1, for B only
#ifndef KF_ABLATE
#define KF_ABLATE 0
#endif
#define KF_SKIP_PACK_A (KF_ABLATE & 17)
#define KF_SKIP_PACK_B (KF_ABLATE & 33)
#if KF_ABLATE && (defined(KF_DTYPE_FP16) || defined(KF_DTYPE_BF16))
#error "KF_ABLATE: fp32 only"
#endif

static void gemm_block(const kf_ctx& ctx, const T* A, const T* B, T* C, int M, int N, int K,
                       float alpha, float beta) {
  const RowRun run = row_run(ctx, M);
  if (run.r0 >= run.r1) return;
  const int n0 = (int)ctx.block_idx.x * NC;
  const int nc = N - n0 < NC ? N - n0 : NC;
  const long long b_panels = (nc + NR - 1) / NR, a_panels = (MC + MR - 1) / MR;
#if KF_UNPACKED_A
  const bool unpacked = nc <= kUnpackedMaxColumns;
#endif
#ifdef KF_WIDE_PARTIALS
  float* P = scratch_floats(2, (long long)(run.r1 - run.r0) * nc);  // the run's fp32 partial sums
#endif
  const int kcs = slice_depth(K);
  for (int k0 = 0; k0 < K; k0 += kcs) {
    const int kc = K - k0 < kcs ? K - k0 : kcs;
    float* Bp = nullptr;  // the fp32 panels of this slice of B, packed once, when first needed
#ifdef KF_BF16_DOT
    const int kp = (kc + 1) / 2;
    unsigned* Bq = (unsigned*)scratch_floats(3, kp * b_panels * NR);
    const unsigned key_b = pack_b_dot(B, N, k0, kc, n0, nc, Bq);
#else
    Bp = scratch_floats(0, kc * b_panels * NR);
#if KF_SKIP_PACK_A || KF_SKIP_PACK_B
    // This thread's panels hold real values once it has packed them at these addresses and sizes
    // (a later shape grows the scratch: packed again). Its first sub-block's A panels stand in
    // for every sub-block's.
    static thread_local const float *packed_b = nullptr, *packed_a = nullptr;
    static thread_local long long packed_n = 0;
    const long long slice_n = kc * b_panels * NR + ((long long)kc << 40);
    const float* const a_now = scratch_floats(1, kc * a_panels * MR);
    const bool pack_now = Bp != packed_b || a_now != packed_a || slice_n != packed_n;
    packed_b = Bp, packed_a = a_now, packed_n = slice_n;
#endif
#if KF_SKIP_PACK_B
    if (pack_now)
#endif
      pack_b(B, N, k0, kc, n0, nc, Bp);
#endif
    for (int m0 = run.r0; m0 < run.r1; m0 += MC) {
      const int mc = run.r1 - m0 < MC ? run.r1 - m0 : MC;
#ifdef KF_BF16_DOT
      {
        unsigned* Aq = (unsigned*)scratch_floats(4, kp * a_panels * MR);
        const unsigned key_a = pack_a_dot(A, K, m0, mc, k0, kc, Aq);
        if ((key_a >> 7) + (key_b >> 7) >= kDotMinExponentSum) {
          KF_FOR_TILES(mc, nc) {
            vf acc[MR][NV];
            micro_kernel_dot(kp, Aq + (long long)(i0 / MR) * kp * MR, Bq + (long long)(j0 / NR) * kp * NR, acc);
            const int rows = mc - i0 < MR ? mc - i0 : MR, cols = nc - j0 < NR ? nc - j0 : NR;
            add_partials(P + (long long)(m0 - run.r0 + i0) * nc + j0, nc, rows, cols, acc, k0 == 0);
          }
          continue;
        }
        // else: products could fall below fp32's normal range; this sub-block goes the exact way
      }
      if (!Bp) {
        Bp = scratch_floats(0, kc * b_panels * NR);
        pack_b(B, N, k0, kc, n0, nc, Bp);
      }
#endif
      float* Ap = scratch_floats(1, kc * a_panels * MR);
#if KF_UNPACKED_A
      // Rows read in place (full panels; a last, partial one is packed), or all packed.
      const int full = unpacked ? mc / MR * MR : 0;
#if KF_SKIP_PACK_A
      if (pack_now && m0 == run.r0)
#endif
        if (full < mc) pack_a(A, K, m0 + full, mc - full, k0, kc, Ap + (long long)(full / MR) * kc * MR);
#elif KF_SKIP_PACK_A
      if (pack_now && m0 == run.r0) pack_a(A, K, m0, mc, k0, kc, Ap);
#else
      pack_a(A, K, m0, mc, k0, kc, Ap);
#endif
      KF_FOR_TILES(mc, nc) {
        vf acc[MR][NV];
#if !defined(KF_WIDE_PARTIALS) && !(KF_ABLATE & 2)
        prefetch_tile(C + (long long)(m0 + i0) * N + n0 + j0, N, mc - i0 < MR ? mc - i0 : MR);
#endif
#if KF_ABLATE & 4
        micro_kernel(kc, Ap, Bp, acc);
#elif KF_ABLATE & 8
        micro_kernel(kc, Ap + (long long)(i0 / MR) * kc * MR, Bp + (long long)(j0 / NR % 8) * kc * NR, acc);
#else
#if KF_UNPACKED_A
        if (i0 < full)
          micro_kernel_rows(kc, A + (long long)(m0 + i0) * K + k0, K, Bp + (long long)(j0 / NR) * kc * NR, acc,
                            j0 == 0 && i0 + 2 * MR <= full ? A + (long long)(m0 + i0 + MR) * K + k0 : nullptr);
        else
          micro_kernel(kc, Ap + (long long)(i0 / MR) * kc * MR, Bp + (long long)(j0 / NR) * kc * NR, acc);
#else
        micro_kernel(kc, Ap + (long long)(i0 / MR) * kc * MR, Bp + (long long)(j0 / NR) * kc * NR, acc);
#endif
#endif  // KF_ABLATE & 4, 8
        const int rows = mc - i0 < MR ? mc - i0 : MR, cols = nc - j0 < NR ? nc - j0 : NR;
#ifdef KF_WIDE_PARTIALS
        add_partials(P + (long long)(m0 - run.r0 + i0) * nc + j0, nc, rows, cols, acc, k0 == 0);
#elif KF_ABLATE & 2
        store_tile(scratch_floats(5, MR * NR), NR, rows, cols, acc, alpha, beta, k0 == 0);
#else
        store_tile(C + (long long)(m0 + i0) * N + n0 + j0, N, rows, cols, acc, alpha, beta, k0 == 0);
#endif
      }
    }
  }
#ifdef KF_WIDE_PARTIALS
  store_block(C + (long long)run.r0 * N + n0, N, run.r1 - run.r0, nc, P, alpha, beta);
#endif
}

KF_KERNEL(gemm, gemm_block)
