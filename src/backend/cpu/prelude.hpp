// Included before every C++ kernel source (g++ -include). A kernel is a plain function
//   static void body(const kf_ctx& ctx, const float* A, ..., int M, ..., float alpha, ...)
// exported under its entry name with KF_KERNEL(entry, body); kforge calls it once per block.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

struct kf_dim3 {
  long long x, y, z;
};
struct kf_ctx {
  kf_dim3 block_idx, grid_dim, block_dim;
  int worker, workers;  // which pool thread runs this block, of how many
};

namespace kf_detail {
template <class... A, std::size_t... I>
inline void call(void (*f)(const kf_ctx&, A...), const kf_ctx& c, void* const* args,
                 std::index_sequence<I...>) {
  f(c, *static_cast<std::remove_cv_t<A>*>(args[I])...);
}
template <class... A>
inline void call(void (*f)(const kf_ctx&, A...), const kf_ctx& c, void* const* args) {
  call(f, c, args, std::index_sequence_for<A...>{});
}
}  // namespace kf_detail

#define KF_KERNEL(entry, body)                                                          \
  extern "C" __attribute__((visibility("default"))) void entry(const kf_ctx* c,         \
                                                               void* const* args) {    \
    kf_detail::call(body, *c, args);                                                    \
  }

// The storage type of the dtype the kernel is compiled for (-DKF_DTYPE_FP16 or _BF16; fp32
// otherwise) and its conversions to and from float: bf16 rounds to nearest even and keeps NaN
// a NaN. Prefixed, so a kernel's own names never collide with them.
#if defined(KF_DTYPE_FP16)
typedef unsigned short kf_storage;
static inline float kf_to_f32(kf_storage h) { return (float)__builtin_bit_cast(_Float16, h); }
static inline kf_storage kf_from_f32(float f) { return __builtin_bit_cast(unsigned short, (_Float16)f); }
#elif defined(KF_DTYPE_BF16)
typedef unsigned short kf_storage;
static inline float kf_to_f32(kf_storage b) { return __builtin_bit_cast(float, (unsigned)b << 16); }
static inline kf_storage kf_from_f32(float f) {
  unsigned x = __builtin_bit_cast(unsigned, f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (kf_storage)((x >> 16) | 0x40u);
  return (kf_storage)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
#else
typedef float kf_storage;
static inline float kf_to_f32(kf_storage f) { return f; }
static inline kf_storage kf_from_f32(float f) { return f; }
#endif

// ---- SIMD helpers of the streaming kernels (activation, softmax, norm, reduce) -----------------
// GCC vector extensions and builtins only: no intrinsics header, which would add half a second
// to every kernel's compile. Values are fp32 in registers whatever the storage type.
#include <sched.h>

// The vector width in floats: the kernel's VW parameter, or where it is 0 or absent the widest
// the compiler targets.
#if defined(VW) && VW != 0
#define KF_VW (VW)
#elif defined(__AVX512F__)
#define KF_VW 16
#else
#define KF_VW 8
#endif
typedef float kf_vf __attribute__((vector_size(KF_VW * 4)));
typedef int kf_vi __attribute__((vector_size(KF_VW * 4)));
static inline kf_vf kf_splat(float f) { return (kf_vf){} + f; }

// KF_VW elements at p (any alignment) to fp32 and back.
#if defined(KF_DTYPE_FP16)
typedef _Float16 kf_vh __attribute__((vector_size(KF_VW * 2), aligned(2)));
static inline kf_vf kf_load(const kf_storage* p) { return __builtin_convertvector(*(const kf_vh*)p, kf_vf); }
static inline void kf_store(kf_storage* p, kf_vf v) { *(kf_vh*)p = __builtin_convertvector(v, kf_vh); }
#elif defined(KF_DTYPE_BF16)
typedef unsigned short kf_vu16 __attribute__((vector_size(KF_VW * 2), aligned(2)));
typedef unsigned kf_vu32 __attribute__((vector_size(KF_VW * 4)));
static inline kf_vf kf_load(const kf_storage* p) {
  return (kf_vf)(__builtin_convertvector(*(const kf_vu16*)p, kf_vu32) << 16);
}
static inline void kf_store(kf_storage* p, kf_vf v) {  // as kf_from_f32, lane by lane
  const kf_vu32 x = (kf_vu32)v;
  const kf_vu32 rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16, quiet = (x >> 16) | 0x40u;
  *(kf_vu16*)p = __builtin_convertvector((x & 0x7fffffffu) > 0x7f800000u ? quiet : rounded, kf_vu16);
}
#else
typedef float kf_vf_unaligned __attribute__((vector_size(KF_VW * 4), aligned(4)));
static inline kf_vf kf_load(const kf_storage* p) { return *(const kf_vf_unaligned*)p; }
static inline void kf_store(kf_storage* p, kf_vf v) { *(kf_vf_unaligned*)p = v; }
#endif

// The first n < KF_VW elements at p, the other lanes `fill`; and the first n lanes of v to p.
static inline kf_vf kf_load_part(const kf_storage* p, int n, float fill) {
  kf_vf v;
  for (int e = 0; e < KF_VW; ++e) v[e] = e < n ? kf_to_f32(p[e]) : fill;
  return v;
}
static inline void kf_store_part(kf_storage* p, int n, kf_vf v) {
  kf_storage tmp[KF_VW];
  kf_store(tmp, v);
  __builtin_memcpy(p, tmp, n * sizeof(kf_storage));
}

// A store that bypasses the cache where p is aligned to the vector's bytes (the lines go to
// memory without first being read: a third less traffic for a kernel that streams its output),
// a plain store otherwise. A block that uses it ends with kf_fence(), so its stores are visible
// when the launch returns.
typedef float kf_b16 __attribute__((vector_size(16)));  // 16, 32 or 64 bytes to stream
typedef float kf_b32 __attribute__((vector_size(32)));
typedef float kf_b64 __attribute__((vector_size(64)));
static inline void kf_stream(float* p, kf_b16 b) { __builtin_ia32_movntps(p, b); }
static inline void kf_stream(float* p, kf_b32 b) { __builtin_ia32_movntps256(p, b); }
static inline void kf_stream(float* p, kf_b64 b) {
#if defined(__AVX512F__)
  __builtin_ia32_movntps512(p, b);
#else
  kf_stream(p, (kf_b32){b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]});
  kf_stream(p + 8, (kf_b32){b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]});
#endif
}
static inline void kf_store_nt(kf_storage* p, kf_vf v) {
  typedef float bytes __attribute__((vector_size(KF_VW * sizeof(kf_storage))));
  if ((reinterpret_cast<unsigned long long>(p) & (sizeof(bytes) - 1)) != 0) return kf_store(p, v);
  bytes b;
  kf_store(reinterpret_cast<kf_storage*>(&b), v);
  kf_stream(reinterpret_cast<float*>(p), b);
}
static inline void kf_fence() { __builtin_ia32_sfence(); }

// a > b ? a : b and a < b ? a : b: the larger (smaller) value or, when either is NaN, b. Exactly
// vmaxps(a, b) / vminps(a, b), one instruction where GCC compiles the ?: forms to a compare and a
// blend.
#if KF_VW == 16 && defined(__AVX512F__)
#define KF_MAXPS(a, b) __builtin_ia32_maxps512_mask(a, b, kf_vf{}, (unsigned short)-1, 4)
#define KF_MINPS(a, b) __builtin_ia32_minps512_mask(a, b, kf_vf{}, (unsigned short)-1, 4)
#elif KF_VW == 8 && defined(__AVX__)
#define KF_MAXPS(a, b) __builtin_ia32_maxps256(a, b)
#define KF_MINPS(a, b) __builtin_ia32_minps256(a, b)
#else
#define KF_MAXPS(a, b) ((a) > (b) ? (a) : (b))
#define KF_MINPS(a, b) ((a) < (b) ? (a) : (b))
#endif
static inline kf_vf kf_max(kf_vf a, kf_vf b) { return KF_MAXPS(a, b); }
static inline kf_vf kf_min(kf_vf a, kf_vf b) { return KF_MINPS(a, b); }
// x clamped to at least lo, or at most hi; a NaN stays NaN.
static inline kf_vf kf_at_least(kf_vf x, float lo) { return kf_max(kf_splat(lo), x); }
static inline kf_vf kf_at_most(kf_vf x, float hi) { return kf_min(kf_splat(hi), x); }
// Whether any lane of a compare's mask is set: one test instruction where there is one.
static inline bool kf_any(kf_vi m) {
#if KF_VW == 16 && defined(__AVX512F__)
  return __builtin_ia32_ptestmd512(m, m, (unsigned short)-1) != 0;
#elif KF_VW == 8 && defined(__AVX__)
  typedef long long v4di __attribute__((vector_size(32)));
  return !__builtin_ia32_ptestz256((v4di)m, (v4di)m);
#else
  for (int i = 0; i < KF_VW; ++i)
    if (m[i]) return true;
  return false;
#endif
}
static inline float kf_hsum(kf_vf v) {
  float s = 0;
  for (int e = 0; e < KF_VW; ++e) s += v[e];
  return s;
}
static inline float kf_hmax(kf_vf v) {
  float m = v[0];
  for (int e = 1; e < KF_VW; ++e) m = v[e] > m ? v[e] : m;
  return m;
}

// e^x = p * 2^k with p = e^r, r = x - k*ln2, |r| <= ln2/2 (Cody-Waite: ln2's high part has 9
// bits, so k*ln2_hi is exact); e^r by a degree-6 polynomial (a Chebyshev fit, relative error
// 1e-8). Returns p; k (an integer, as a float) goes to `k`. The shared part of kf_exp and
// kf_exp_clamped.
static inline kf_vf kf_exp_reduced(kf_vf x, kf_vf& k) {
  const kf_vf magic = kf_splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  k = (x * 1.44269504f + magic) - magic;
  const kf_vf r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  kf_vf p = kf_splat(1.3926176e-3f);
  p = p * r + 8.3631733e-3f;
  p = p * r + 4.1666556e-2f;
  p = p * r + 1.6666578e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}

// p * 2^k for an integer k in [-150, 128], rounded once, subnormal results included. AVX-512 has
// it in one instruction (scalef), which also never takes the slow path a multiply whose normal
// operands underflow takes on Zen 4: with such an exp, silu on inputs with -1000s ran at half
// speed. Elsewhere 2^k goes into p's exponent bits, in two steps where the result is subnormal
// (k < -125): 2^-125 into the bits, 2^(k + 125) as a factor.
#if defined(__AVX512F__) && KF_VW == 16 || defined(__AVX512VL__) && KF_VW == 8
#define KF_HAS_SCALEF 1
#endif
static inline kf_vf kf_scale2(kf_vf p, kf_vf k) {
#if defined(KF_HAS_SCALEF) && KF_VW == 16
  return __builtin_ia32_scalefps512_mask(p, k, kf_vf{}, (unsigned short)-1, 4);
#elif defined(KF_HAS_SCALEF)
  return __builtin_ia32_scalefps256_mask(p, k, kf_vf{}, (unsigned char)-1);
#else
  const kf_vi ki = __builtin_convertvector(k, kf_vi);
  const kf_vi k1 = ki < -125 ? -125 : ki;
  return (kf_vf)((kf_vi)p + (k1 << 23)) * (kf_vf)((ki - k1 + 127) << 23);
#endif
}

// e^x within ~1 ulp for x <= 88, subnormal results included; x < -104 gives 0, -inf too.
static inline kf_vf kf_exp(kf_vf x) {
  kf_vf k;
  const kf_vf p = kf_exp_reduced(kf_at_least(x, -104.0f), k);
  return kf_scale2(p, k);
}

// e^x within ~1 ulp for x in [-86, 88], the nearest end's value outside: never subnormal, for
// the kernels whose error bounds allow it (cheaper than kf_exp without AVX-512).
static inline kf_vf kf_exp_clamped(kf_vf x) {
  kf_vf k;
  const kf_vf p = kf_exp_reduced(kf_at_most(kf_at_least(x, -86.0f), 88.0f), k);
#if defined(KF_HAS_SCALEF)
  return kf_scale2(p, k);
#else
  return (kf_vf)((kf_vi)p + (__builtin_convertvector(k, kf_vi) << 23));
#endif
}

// 1/x for normal x within ~1 ulp: where AVX-512 has it, the hardware's 14-bit estimate and one
// Newton step (a third of a division's time), a division elsewhere.
static inline kf_vf kf_rcp(kf_vf x) {
#if defined(__AVX512F__) && KF_VW == 16
  const kf_vf r = __builtin_ia32_rcp14ps512_mask(x, kf_vf{}, (unsigned short)-1);
  return r + r * (1.0f - x * r);
#elif defined(__AVX512VL__) && KF_VW == 8
  const kf_vf r = __builtin_ia32_rcp14ps256_mask(x, kf_vf{}, (unsigned char)-1);
  return r + r * (1.0f - x * r);
#else
  return 1.0f / x;
#endif
}

// ---- blocks that share one row (or column tile) ------------------------------------------------
// When rows alone cannot keep the threads busy, up to KF_SHARE blocks of a launch take one chunk
// of a row each and exchange partial results. The pool hands out blocks in index order and a
// row's blocks are adjacent (the grid's x), so with at most one block per thread sharing a row
// every block it waits for has a thread: no deadlock.
constexpr int KF_SHARE = 64;

// How many blocks share a group (a row or tile) of the `groups`: several only when the groups
// alone leave threads idle, never more than the threads or the grid's x.
static inline int kf_sharers(const kf_ctx& ctx, long long groups) {
  if (groups >= 2 * ctx.workers) return 1;
  int P = (int)ctx.grid_dim.x < ctx.workers ? (int)ctx.grid_dim.x : ctx.workers;
  return P > KF_SHARE ? KF_SHARE : P;
}

// Which part of a row-wise launch (M rows of N elements) a block owns: the kf_sharers(ctx, M)
// blocks of the grid's x share each row, block x taking whole vectors [j0, j1) (`per` each);
// the rows go to the grid's y blocks in even runs of at most `rows` rows, but at least two
// runs per thread where M allows (the grid's y is an upper bound; the blocks beyond get none).
// Fewer, longer runs are longer streams; one row per block on a small M costs more than it
// balances (softmax 16 x 4096 on 2 threads: 16 us with 16 blocks, 12 with 4).
struct kf_row_share {
  int p, P;                      // this block's chunk of each row, of P
  long long per, j0, j1, r0, r1;  // chunk length; this block's columns and rows
  bool active;                   // false: nothing to do
};
static inline kf_row_share kf_share_rows(const kf_ctx& ctx, long long M, long long N, long long rows) {
  kf_row_share s{};
  s.P = kf_sharers(ctx, M);
  s.p = (int)ctx.block_idx.x;
  s.per = ((N + s.P - 1) / s.P + KF_VW - 1) / KF_VW * KF_VW;
  s.j0 = s.p * s.per < N ? s.p * s.per : N;
  s.j1 = s.j0 + s.per < N ? s.j0 + s.per : N;
  const long long runs = (M + rows - 1) / rows, two_each = 2LL * ctx.workers;
  long long G = runs > two_each ? runs : two_each;
  G = G < ctx.grid_dim.y ? G : ctx.grid_dim.y;
  const long long b = ctx.block_idx.y;
  s.r0 = b * M / G;
  s.r1 = (b + 1) * M / G;
  s.active = s.p < s.P && b < G && s.r0 < s.r1;
  return s;
}

static inline void kf_pause(int& spins) {
  if (++spins > 256) sched_yield();  // the machine may have fewer cores than threads
  else __builtin_ia32_pause();
}

// Block p of the P blocks sharing `group` publishes its W floats `mine`; returns when all P
// have, with every block's floats in all[0..P).
template <int W>
static void kf_exchange(long long group, int p, int P, const float* mine, float (*all)[W]) {
  struct Slot {  // zero-initialized: owner 0 is free, else the group + 1
    long long owner;
    int arrived, left;
    float part[KF_SHARE][W];
  };
  static Slot slots[16];
  Slot& s = slots[group % 16];
  int spins = 0;
  for (long long o; (o = __atomic_load_n(&s.owner, __ATOMIC_ACQUIRE)) != group + 1;) {
    long long free_slot = 0;
    if (o == 0 && __atomic_compare_exchange_n(&s.owner, &free_slot, group + 1, false,
                                              __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      break;
    kf_pause(spins);
  }
  __builtin_memcpy(s.part[p], mine, sizeof(float) * W);
  __atomic_fetch_add(&s.arrived, 1, __ATOMIC_ACQ_REL);
  while (__atomic_load_n(&s.arrived, __ATOMIC_ACQUIRE) < P) kf_pause(spins);
  __builtin_memcpy(all, s.part, sizeof(float) * W * P);
  if (__atomic_add_fetch(&s.left, 1, __ATOMIC_ACQ_REL) == P) {  // the last one frees the slot
    __atomic_store_n(&s.arrived, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s.left, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s.owner, 0, __ATOMIC_RELEASE);
  }
}
