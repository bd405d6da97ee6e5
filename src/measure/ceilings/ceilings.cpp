// Micro-benchmarks for the cpu backend's ceilings, launched one block per pool thread (the
// host asks probe_workers how many there are) or a single block for one thread.
// peak_*: 12 independent FMA or dot-product chains at the widest SIMD the compiler targets
// (-march=native); each block writes its sink to out[block], and block 0 writes the
// operations one iteration does per block to out[grid] (0: the CPU lacks the instruction).
// read / write / copy / triad: STREAM's kernels; each block sweeps its own contiguous chunk
// `reps` times (reps > 1 keeps a cache-sized chunk in the cache). write_nt / copy_nt / triad_nt
// store with non-temporal (streaming) stores, which skip the read-for-ownership of every
// written line: a kernel that streams its output moves up to 1.5x (copy) the bytes per second
// of plain stores, and the ceiling must be at least as high as what such a kernel reaches.
#include <immintrin.h>

static void probe(const kf_ctx& ctx, float* out) { out[0] = float(ctx.workers); }
KF_KERNEL(probe_workers, probe)

#if defined(__AVX512F__)
constexpr int kBytes = 64;
#else
constexpr int kBytes = 32;
#endif
constexpr int kChains = 12;  // enough independent chains to hide the latency on any x86 core

static void report(const kf_ctx& ctx, float* out, float sink, float ops_per_iter) {
  out[ctx.block_idx.x] = sink;
  if (ctx.block_idx.x == 0) out[ctx.grid_dim.x] = ops_per_iter;
}

template <class T>
static void fma_chains(const kf_ctx& ctx, float* out, int iters) {
  typedef T V __attribute__((vector_size(kBytes)));
  constexpr int kLanes = kBytes / int(sizeof(T));
  V acc[kChains];
  V m, a;
  for (int l = 0; l < kLanes; ++l) {
    m[l] = T(0.9999999);
    a[l] = T(1e-7);
  }
  for (int c = 0; c < kChains; ++c) acc[c] = m * T(c + 1);
  for (int i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * m + a;  // contracted to one FMA
    __asm__ volatile("" : "+v"(m));  // keeps the compiler from folding the chain
  }
  T s = 0;
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < kLanes; ++l) s += acc[c][l];
  report(ctx, out, float(s), 2.0f * kChains * kLanes);
}

static void peak32(const kf_ctx& ctx, float* out, int iters) { fma_chains<float>(ctx, out, iters); }
static void peak64(const kf_ctx& ctx, float* out, int iters) { fma_chains<double>(ctx, out, iters); }
KF_KERNEL(peak_fp32, peak32)
KF_KERNEL(peak_fp64, peak64)

// bf16 pairs dotted into fp32 (vdpbf16ps): 2 products per fp32 lane, 4 FLOPs.
static void peak16b(const kf_ctx& ctx, float* out, int iters) {
#if defined(__AVX512BF16__)
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80);  // 1.0
  __m512bh y = (__m512bh)_mm512_set1_epi16(0x3380);        // ~6e-8
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c + 1));
  for (int i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], x, y);
    __asm__ volatile("" : "+v"(y));
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  report(ctx, out, _mm512_reduce_add_ps(s), 4.0f * kChains * 16);
#else
  (void)iters;
  report(ctx, out, 0.0f, 0.0f);
#endif
}
KF_KERNEL(peak_bf16, peak16b)

// int8: unsigned x signed bytes, 4 products summed into each int32 lane (vpdpbusd), 8 ops;
// without VNNI, AVX2's vpmaddubsw + vpmaddwd + vpaddd does the same 32 products per 256 bits.
static void peak8(const kf_ctx& ctx, float* out, int iters) {
#if defined(__AVX512VNNI__)
  const __m512i x = _mm512_set1_epi8(3);
  __m512i y = _mm512_set1_epi8(-2);
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
  for (int i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], x, y);
    __asm__ volatile("" : "+v"(y));
  }
  __m512i s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_epi32(s, acc[c]);
  report(ctx, out, float(_mm512_reduce_add_epi32(s)), 8.0f * kChains * 16);
#elif defined(__AVX2__)
  const __m256i x = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  __m256i y = _mm256_set1_epi8(-2);
  __m256i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_epi32(c);
  for (int i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), ones));
    __asm__ volatile("" : "+v"(y));
  }
  __m256i s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_epi32(s, acc[c]);
  alignas(32) int lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  report(ctx, out, float(lanes[0] + lanes[7]), 2.0f * kChains * 32);
#else
  (void)iters;
  report(ctx, out, 0.0f, 0.0f);
#endif
}
KF_KERNEL(peak_int8, peak8)

// --- bandwidth ---------------------------------------------------------------------------
typedef float VF __attribute__((vector_size(kBytes)));
constexpr long long kStep = kBytes / 4;  // floats per vector

// This block's contiguous chunk of [0, n), in whole vectors (the buffers are 64-byte aligned).
static void chunk(const kf_ctx& ctx, long long n, long long& lo, long long& hi) {
  const long long vectors = n / kStep, per = (vectors + ctx.grid_dim.x - 1) / ctx.grid_dim.x;
  lo = ctx.block_idx.x * per * kStep;
  hi = lo + per * kStep < vectors * kStep ? lo + per * kStep : vectors * kStep;
  if (lo > hi) lo = hi;
}

#define KF_NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))

KF_NO_LIBCALLS static void read_body(const kf_ctx& ctx, const float* a, float* out, int n,
                                     int reps) {
  long long lo, hi;
  chunk(ctx, n, lo, hi);
  VF s0 = {}, s1 = {}, s2 = {}, s3 = {};
  for (int r = 0; r < reps; ++r) {
    for (long long i = lo; i + 4 * kStep <= hi; i += 4 * kStep) {
      s0 += *reinterpret_cast<const VF*>(a + i);
      s1 += *reinterpret_cast<const VF*>(a + i + kStep);
      s2 += *reinterpret_cast<const VF*>(a + i + 2 * kStep);
      s3 += *reinterpret_cast<const VF*>(a + i + 3 * kStep);
    }
    __asm__ volatile("" ::: "memory");
  }
  const VF s = s0 + s1 + s2 + s3;
  float t = 0;
  for (int l = 0; l < int(kStep); ++l) t += s[l];
  out[ctx.block_idx.x] = t;
}
KF_KERNEL(read, read_body)

KF_NO_LIBCALLS static void write_body(const kf_ctx& ctx, float* a, int n, float s, int reps) {
  long long lo, hi;
  chunk(ctx, n, lo, hi);
  VF v;
  for (int l = 0; l < int(kStep); ++l) v[l] = s;
  for (int r = 0; r < reps; ++r) {
    for (long long i = lo; i < hi; i += kStep) *reinterpret_cast<VF*>(a + i) = v;
    __asm__ volatile("" ::: "memory");
  }
}
KF_KERNEL(write, write_body)

KF_NO_LIBCALLS static void copy_body(const kf_ctx& ctx, float* a, const float* b, int n, int reps) {
  long long lo, hi;
  chunk(ctx, n, lo, hi);
  for (int r = 0; r < reps; ++r) {
    for (long long i = lo; i < hi; i += kStep)
      *reinterpret_cast<VF*>(a + i) = *reinterpret_cast<const VF*>(b + i);
    __asm__ volatile("" ::: "memory");
  }
}
KF_KERNEL(copy, copy_body)

KF_NO_LIBCALLS static void triad_body(const kf_ctx& ctx, float* a, const float* b, const float* c,
                                      int n, float s, int reps) {
  long long lo, hi;
  chunk(ctx, n, lo, hi);
  for (int r = 0; r < reps; ++r) {
    for (long long i = lo; i < hi; i += kStep)
      *reinterpret_cast<VF*>(a + i) =
          *reinterpret_cast<const VF*>(b + i) + s * *reinterpret_cast<const VF*>(c + i);
    __asm__ volatile("" ::: "memory");
  }
}
KF_KERNEL(triad, triad_body)

// Non-temporal stores: the same kernels, the line written straight to memory.
static inline void stream_store(float* p, VF v) {
#if defined(__AVX512F__)
  _mm512_stream_ps(p, (__m512)v);
#else
  _mm256_stream_ps(p, (__m256)v);
#endif
}

KF_NO_LIBCALLS static void write_nt_body(const kf_ctx& ctx, float* a, int n, float s, int reps) {
  long long lo, hi;
  chunk(ctx, n, lo, hi);
  VF v;
  for (int l = 0; l < int(kStep); ++l) v[l] = s;
  for (int r = 0; r < reps; ++r)
    for (long long i = lo; i < hi; i += kStep) stream_store(a + i, v);
  _mm_sfence();
}
KF_KERNEL(write_nt, write_nt_body)

KF_NO_LIBCALLS static void copy_nt_body(const kf_ctx& ctx, float* a, const float* b, int n, int reps) {
  long long lo, hi;
  chunk(ctx, n, lo, hi);
  for (int r = 0; r < reps; ++r)
    for (long long i = lo; i < hi; i += kStep) stream_store(a + i, *reinterpret_cast<const VF*>(b + i));
  _mm_sfence();
}
KF_KERNEL(copy_nt, copy_nt_body)

KF_NO_LIBCALLS static void triad_nt_body(const kf_ctx& ctx, float* a, const float* b, const float* c,
                                         int n, float s, int reps) {
  long long lo, hi;
  chunk(ctx, n, lo, hi);
  for (int r = 0; r < reps; ++r)
    for (long long i = lo; i < hi; i += kStep)
      stream_store(a + i, *reinterpret_cast<const VF*>(b + i) + s * *reinterpret_cast<const VF*>(c + i));
  _mm_sfence();
}
KF_KERNEL(triad_nt, triad_nt_body)
