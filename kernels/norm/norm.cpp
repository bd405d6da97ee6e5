// rmsnorm and layernorm for the cpu backend (two entries, one body), row-major (M,N), any M, N:
//   rmsnorm:   Y = X / sqrt(mean(X^2) + eps) * gamma
//   layernorm: Y = (X - mean) / sqrt(var + eps) * gamma + beta
// Each block owns ROWS rows. A row is read from memory once; its later passes re-read it from
// L1/L2. layernorm is two-pass (the mean, then the sum of squared deviations from it: stable
// where E[x^2] - E[x]^2 cancels), rmsnorm one pass (a sum of squares), then the output pass.
// All passes run on VW-float SIMD vectors with ACC independent accumulators; a row's tail is
// a masked vector (padding 0, excluded from the deviations).
//
// Few long rows (M < 2 x threads): up to SPLIT blocks share a row (grid x), each one chunk.
// They exchange partials (count, mean, sum of squared deviations; Chan et al.'s pairwise
// combination) through a slot in shared memory and wait for each other (a row barrier). The
// pool hands out blocks in index order and a row's blocks are adjacent, so with at most one
// block per thread sharing a row every block it waits for has a thread: no deadlock.
//
// Parameters (all #defines):
//   VW     SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   ACC    independent vector accumulators per pass
//   ROWS   rows per block
//   SPLIT  most blocks that share one row (the grid's x; at most one per thread is used)
//   NT     1: non-temporal stores of Y (where aligned), 0: plain stores
#include <sched.h>

#include <atomic>
#include <cmath>
#include <cstring>

#if VW == 0
#undef VW
#if defined(__AVX512F__)
#define VW 16
#else
#define VW 8
#endif
#endif

typedef float vf __attribute__((vector_size(VW * 4)));

// --- storage type T and VW-wide conversions to fp32 ---------------------------------------
#if defined(KF_DTYPE_FP16)
typedef unsigned short T;
typedef _Float16 vh __attribute__((vector_size(VW * 2), aligned(2)));
static inline vf load_v(const T* p) { return __builtin_convertvector(*(const vh*)p, vf); }
static inline void store_v(T* p, vf v) { *(vh*)p = __builtin_convertvector(v, vh); }
static inline float to_f32(T h) { return (float)__builtin_bit_cast(_Float16, h); }
#elif defined(KF_DTYPE_BF16)
typedef unsigned short T;
typedef unsigned short vu16 __attribute__((vector_size(VW * 2), aligned(2)));
typedef unsigned vu32 __attribute__((vector_size(VW * 4)));
static inline vf load_v(const T* p) {
  return (vf)(__builtin_convertvector(*(const vu16*)p, vu32) << 16);
}
static inline void store_v(T* p, vf v) {  // round to nearest even; NaN stays NaN
  const vu32 x = (vu32)v;
  const vu32 rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const vu32 quiet = (x >> 16) | 0x40u;
  *(vu16*)p = __builtin_convertvector((x & 0x7fffffffu) > 0x7f800000u ? quiet : rounded, vu16);
}
static inline float to_f32(T b) { return __builtin_bit_cast(float, (unsigned)b << 16); }
#else
typedef float T;
typedef float vf_unaligned __attribute__((vector_size(VW * 4), aligned(4)));
static inline vf load_v(const T* p) { return *(const vf_unaligned*)p; }
static inline void store_v(T* p, vf v) { *(vf_unaligned*)p = v; }
static inline float to_f32(T f) { return f; }
#endif

// Stores of whole vectors: with NT = 1, non-temporal where the address is aligned (the
// output goes to memory without first reading its lines into the cache: a third less
// traffic for a streaming kernel), plain otherwise. A block ends with fence() so its
// non-temporal stores are visible before the launch returns.
#if NT
#include <immintrin.h>
static inline void put_v(T* p, vf v) {
  constexpr int kB = VW * (int)sizeof(T);
  if (((unsigned long long)p & (kB - 1)) != 0) return store_v(p, v);
  T tmp[VW] __attribute__((aligned(64)));
  store_v(tmp, v);
#if defined(__AVX512F__)
  if constexpr (kB == 64) return _mm512_stream_si512((__m512i*)p, _mm512_load_si512(tmp));
#endif
  if constexpr (kB % 32 == 0) {
    for (int o = 0; o < kB; o += 32)
      _mm256_stream_si256((__m256i*)((char*)p + o), _mm256_load_si256((const __m256i*)((char*)tmp + o)));
    return;
  }
  for (int o = 0; o < kB; o += 16)
    _mm_stream_si128((__m128i*)((char*)p + o), _mm_load_si128((const __m128i*)((char*)tmp + o)));
}
static inline void fence() { _mm_sfence(); }
#else
static inline void put_v(T* p, vf v) { store_v(p, v); }
static inline void fence() {}
#endif

// n < VW elements at p, the rest `fill`.
static inline vf load_part(const T* p, int n, float fill) {
  vf v;
  for (int e = 0; e < VW; ++e) v[e] = e < n ? to_f32(p[e]) : fill;
  return v;
}
static inline void store_part(T* p, int n, vf v) {
  T tmp[VW];
  store_v(tmp, v);
  std::memcpy(p, tmp, n * sizeof(T));
}
static inline float hsum(vf v) {
  float s = 0;
  for (int e = 0; e < VW; ++e) s += v[e];
  return s;
}

// --- the row barrier for blocks that share a row ----------------------------------------------
constexpr int kMaxShare = 64;
struct RowSlot {
  std::atomic<long long> owner{-1};  // the row using the slot, -1 when free
  std::atomic<int> arrived{0}, left{0};
  float part[kMaxShare][3];
};
static RowSlot g_slots[64];

static inline void spin_pause(int& spins) {
  if (++spins > 256) sched_yield();  // the machine may have fewer cores than threads
  else __builtin_ia32_pause();
}

// Block `p` of the `P` blocks sharing `row` publishes `mine`; returns when all P have, with
// every partial in `all`.
static void exchange(long long row, int p, int P, const float mine[3], float all[][3]) {
  RowSlot& s = g_slots[row % 64];
  int spins = 0;
  for (long long o = s.owner.load(std::memory_order_acquire); o != row;
       o = s.owner.load(std::memory_order_acquire)) {
    long long free_slot = -1;
    if (o == -1 && s.owner.compare_exchange_strong(free_slot, row, std::memory_order_acq_rel)) break;
    spin_pause(spins);
  }
  std::memcpy(s.part[p], mine, sizeof(float) * 3);
  s.arrived.fetch_add(1, std::memory_order_acq_rel);
  while (s.arrived.load(std::memory_order_acquire) < P) spin_pause(spins);
  std::memcpy(all, s.part, sizeof(float) * 3 * P);
  if (s.left.fetch_add(1, std::memory_order_acq_rel) + 1 == P) {  // the last one frees the slot
    s.arrived.store(0, std::memory_order_relaxed);
    s.left.store(0, std::memory_order_relaxed);
    s.owner.store(-1, std::memory_order_release);
  }
}

// --- the kernel --------------------------------------------------------------------------------
#define STEP (VW * ACC)

// Sum of x[0:n) (kSquares: of (x - c)^2).
template <bool kSquares>
static float chunk_sum(const T* x, long long n, float c) {
  vf s[ACC];
  for (int a = 0; a < ACC; ++a) s[a] = (vf){};
  auto term = [&](vf v) {
    if constexpr (kSquares) { v -= c; return v * v; }
    return v;
  };
  long long j = 0;
  for (; j + STEP <= n; j += STEP)
#pragma GCC unroll 16
    for (int a = 0; a < ACC; ++a) s[a] += term(load_v(x + j + a * VW));
  for (; j + VW <= n; j += VW) s[0] += term(load_v(x + j));
  if (j < n) s[0] += term(load_part(x + j, (int)(n - j), c));  // padding c: adds 0 either way
  for (int a = 1; a < ACC; ++a) s[0] += s[a];
  return hsum(s[0]);
}

// y = (x - mu) * inv * g (+ b) for n elements.
template <bool kCentered>
static void chunk_write(const T* x, const T* g, const T* b, long long n, float mu, float inv, T* y) {
  long long j = 0;
  for (; j + VW <= n; j += VW) {
    vf v = (load_v(x + j) - mu) * inv * load_v(g + j);
    if constexpr (kCentered) v += load_v(b + j);
    put_v(y + j, v);
  }
  if (j < n) {
    const int r = (int)(n - j);
    vf v = (load_part(x + j, r, 0) - mu) * inv * load_part(g + j, r, 0);
    if constexpr (kCentered) v += load_part(b + j, r, 0);
    store_part(y + j, r, v);
  }
}

template <bool kCentered>
static void norm_block(const kf_ctx& ctx, const T* X, const T* G, const T* B, T* Y, int M, int N,
                       float eps) {
  // Blocks share rows only when rows alone cannot keep the threads busy.
  int P = 1;
  if (M < 2 * ctx.workers) {
    P = (int)ctx.grid_dim.x < ctx.workers ? (int)ctx.grid_dim.x : ctx.workers;
    if (P > kMaxShare) P = kMaxShare;
  }
  const int p = (int)ctx.block_idx.x;
  if (p >= P) return;
  const long long per = ((N + P - 1) / P + VW - 1) / VW * VW;
  const long long j0 = p * per < N ? p * per : N, j1 = j0 + per < N ? j0 + per : N, n = j1 - j0;
  const long long r0 = ctx.block_idx.y * (long long)ROWS;
  for (long long i = r0; i < r0 + ROWS && i < M; ++i) {
    const T* x = X + i * N + j0;
    // This chunk's (count, mean, sum of squared deviations); rmsnorm: mean 0.
    float mean = 0;
    if constexpr (kCentered) mean = n > 0 ? chunk_sum<false>(x, n, 0) / (float)n : 0.0f;
    float m2 = n > 0 ? chunk_sum<true>(x, n, mean) : 0.0f;
    if (P > 1) {  // combine the P partials in a fixed order, the same in every block
      const float mine[3] = {(float)n, mean, m2};
      float all[kMaxShare][3];
      exchange(i, p, P, mine, all);
      float cnt = 0;
      mean = 0, m2 = 0;
      for (int q = 0; q < P; ++q) {
        if (all[q][0] == 0) continue;
        const float c = cnt + all[q][0], d = all[q][1] - mean;
        mean += d * (all[q][0] / c);
        m2 += all[q][2] + d * d * (cnt * all[q][0] / c);
        cnt = c;
      }
    }
    const float inv = 1.0f / std::sqrt(m2 / (float)N + eps);
    chunk_write<kCentered>(x, G + j0, kCentered ? B + j0 : nullptr, n, mean, inv, Y + i * N + j0);
  }
  fence();
}

static void rmsnorm_block(const kf_ctx& ctx, const T* X, const T* G, T* Y, int M, int N, float eps) {
  norm_block<false>(ctx, X, G, nullptr, Y, M, N, eps);
}
static void layernorm_block(const kf_ctx& ctx, const T* X, const T* G, const T* B, T* Y, int M,
                            int N, float eps) {
  norm_block<true>(ctx, X, G, B, Y, M, N, eps);
}

KF_KERNEL(rmsnorm, rmsnorm_block)
KF_KERNEL(layernorm, layernorm_block)
