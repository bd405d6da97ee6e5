// softmax for the cpu backend: Y = exp(X - rowmax) / rowsum, row-major (M,N), any M, N >= 1.
// Each block owns ROWS rows. A row is read from memory once: pass 1 finds its max, pass 2 sums
// e = exp(x - max) and keeps e in a per-thread fp32 buffer (in L1/L2 for rows up to ~256K
// elements), pass 3 writes e * (1/sum) in the storage type. All passes run on VW-float SIMD
// vectors with ACC independent accumulators; the row's tail is a masked vector (padding -inf).
//
// Few long rows (M < 2 x threads): up to SPLIT blocks share a row (grid x), each taking one
// chunk. They exchange their partial (max, sum) through a slot in shared memory and wait for
// each other (a row barrier), then each rescales its chunk by exp(max_p - max) / sum. The pool
// hands out blocks in index order and a row's blocks are adjacent, so with at most one block
// per thread sharing a row every block it waits for has a thread: no deadlock.
//
// Parameters (all #defines):
//   VW     SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   ACC    independent vector accumulators per pass (hides the latency of max/add chains)
//   ROWS   rows per block (short rows amortize the block's scheduling cost)
//   SPLIT  most blocks that share one row (the grid's x; at most one per thread is used)
//   NT     1: non-temporal stores of Y (where aligned), 0: plain stores
#include <sched.h>

#include <atomic>
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

typedef float vf __attribute__((vector_size(VW * 4)));
typedef int vi __attribute__((vector_size(VW * 4)));

// --- storage type T and VW-wide conversions to fp32 ---------------------------------------
#if defined(KF_DTYPE_FP16)
typedef unsigned short T;
typedef _Float16 vh __attribute__((vector_size(VW * 2), aligned(2)));
static inline vf load_v(const T* p) { return __builtin_convertvector(*(const vh*)p, vf); }
static inline void store_v(T* p, vf v) { *(vh*)p = __builtin_convertvector(v, vh); }
static inline float to_f32(T h) { return (float)__builtin_bit_cast(_Float16, h); }
static inline T from_f32(float f) { return __builtin_bit_cast(unsigned short, (_Float16)f); }
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

static inline vf vmax(vf a, vf b) { return a > b ? a : b; }
static inline float hmax(vf v) {
  float m = v[0];
  for (int e = 1; e < VW; ++e) m = v[e] > m ? v[e] : m;
  return m;
}
static inline float hsum(vf v) {
  float s = 0;
  for (int e = 0; e < VW; ++e) s += v[e];
  return s;
}

// exp(x) for x <= 88, within ~2 ulp, subnormal results included: x = k*ln2 + r with
// |r| <= ln2/2 (Cody-Waite, ln2's high part has 9 bits so k*ln2_hi is exact), a degree-7
// Taylor polynomial for e^r, and 2^k applied as two normal factors 2^(k/2) * 2^(k - k/2).
static inline vf vexp(vf x) {
  x = x < -104.0f ? (vf){} - 104.0f : x;  // e^-104 rounds to 0; also maps -inf to 0
  const vf magic = (vf){} + 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const vf k = (x * 1.44269504f + magic) - magic;
  const vf r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  vf p = (vf){} + (1.0f / 5040);
  p = p * r + (1.0f / 720);
  p = p * r + (1.0f / 120);
  p = p * r + (1.0f / 24);
  p = p * r + (1.0f / 6);
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const vi ki = __builtin_convertvector(k, vi);
  const vi k1 = ki >> 1, k2 = ki - k1;
  return p * (vf)((k1 + 127) << 23) * (vf)((k2 + 127) << 23);
}

// --- the row barrier for blocks that share a row ----------------------------------------------
constexpr int kMaxShare = 64;
struct RowSlot {
  std::atomic<long long> owner{-1};  // the row using the slot, -1 when free
  std::atomic<int> arrived{0}, left{0};
  float part[kMaxShare][2];
};
static RowSlot g_slots[64];

static inline void spin_pause(int& spins) {
  if (++spins > 256) sched_yield();  // the machine may have fewer cores than threads
  else __builtin_ia32_pause();
}

// Block `p` of the `P` blocks sharing `row` publishes `mine`; returns when all P have, with
// every partial in `all`.
static void exchange(long long row, int p, int P, const float mine[2], float all[][2]) {
  RowSlot& s = g_slots[row % 64];
  int spins = 0;
  for (long long o = s.owner.load(std::memory_order_acquire); o != row;
       o = s.owner.load(std::memory_order_acquire)) {
    long long free_slot = -1;
    if (o == -1 && s.owner.compare_exchange_strong(free_slot, row, std::memory_order_acq_rel)) break;
    spin_pause(spins);
  }
  s.part[p][0] = mine[0];
  s.part[p][1] = mine[1];
  s.arrived.fetch_add(1, std::memory_order_acq_rel);
  while (s.arrived.load(std::memory_order_acquire) < P) spin_pause(spins);
  std::memcpy(all, s.part, sizeof(float) * 2 * P);
  if (s.left.fetch_add(1, std::memory_order_acq_rel) + 1 == P) {  // the last one frees the slot
    s.arrived.store(0, std::memory_order_relaxed);
    s.left.store(0, std::memory_order_relaxed);
    s.owner.store(-1, std::memory_order_release);
  }
}

// --- the kernel --------------------------------------------------------------------------------
static float* scratch(long long floats) {  // per thread, grown to the largest chunk seen
  static thread_local float* buf = nullptr;
  static thread_local long long cap = 0;
  if (cap < floats) {
    std::free(buf);
    buf = static_cast<float*>(std::aligned_alloc(64, ((floats * 4 + 63) / 64) * 64));
    cap = floats;
  }
  return buf;
}

#define STEP (VW * ACC)

// Max of x[0:n).
static float chunk_max(const T* x, long long n) {
  vf m[ACC];
  for (int a = 0; a < ACC; ++a) m[a] = (vf){} - __builtin_inff();
  long long j = 0;
  for (; j + STEP <= n; j += STEP)
#pragma GCC unroll 16
    for (int a = 0; a < ACC; ++a) m[a] = vmax(m[a], load_v(x + j + a * VW));
  for (; j + VW <= n; j += VW) m[0] = vmax(m[0], load_v(x + j));
  if (j < n) m[0] = vmax(m[0], load_part(x + j, (int)(n - j), -__builtin_inff()));
  for (int a = 1; a < ACC; ++a) m[0] = vmax(m[0], m[a]);
  return hmax(m[0]);
}

// e[j] = exp(x[j] - mx) for j < n (padded to whole vectors); returns the sum of e.
static float chunk_exp_sum(const T* x, long long n, float mx, float* e) {
  vf s[ACC];
  for (int a = 0; a < ACC; ++a) s[a] = (vf){};
  long long j = 0;
  for (; j + STEP <= n; j += STEP)
#pragma GCC unroll 16
    for (int a = 0; a < ACC; ++a) {
      const vf v = vexp(load_v(x + j + a * VW) - mx);
      *(vf*)(e + j + a * VW) = v;
      s[a] += v;
    }
  for (; j < n; j += VW) {
    const vf v = vexp((j + VW <= n ? load_v(x + j) : load_part(x + j, (int)(n - j), -__builtin_inff())) - mx);
    *(vf*)(e + j) = v;
    s[0] += v;
  }
  for (int a = 1; a < ACC; ++a) s[0] += s[a];
  return hsum(s[0]);
}

// y[j] = e[j] * scale for j < n.
static void chunk_write(const float* e, long long n, float scale, T* y) {
  long long j = 0;
  for (; j + VW <= n; j += VW) put_v(y + j, *(const vf*)(e + j) * scale);
  if (j < n) store_part(y + j, (int)(n - j), *(const vf*)(e + j) * scale);
}

static void softmax_block(const kf_ctx& ctx, const T* X, T* Y, int M, int N) {
  // Blocks share rows only when rows alone cannot keep the threads busy.
  int P = 1;
  if (M < 2 * ctx.workers) {
    P = (int)ctx.grid_dim.x < ctx.workers ? (int)ctx.grid_dim.x : ctx.workers;
    if (P > kMaxShare) P = kMaxShare;
  }
  const int p = (int)ctx.block_idx.x;
  if (p >= P) return;
  // Chunks of whole vectors: block p takes [j0, j1).
  const long long per = ((N + P - 1) / P + VW - 1) / VW * VW;
  const long long j0 = p * per < N ? p * per : N, j1 = j0 + per < N ? j0 + per : N;
  float* e = scratch(per + VW);
  const long long r0 = ctx.block_idx.y * (long long)ROWS;
  for (long long i = r0; i < r0 + ROWS && i < M; ++i) {
    const T* x = X + i * N + j0;
    const float mx = j1 > j0 ? chunk_max(x, j1 - j0) : -__builtin_inff();
    const float sum = j1 > j0 ? chunk_exp_sum(x, j1 - j0, mx, e) : 0.0f;
    float scale = 1.0f / sum;
    if (P > 1) {  // combine the P partials in a fixed order, the same in every block
      const float mine[2] = {mx, sum};
      float all[kMaxShare][2];
      exchange(i, p, P, mine, all);
      float gmax = all[0][0];
      for (int q = 1; q < P; ++q) gmax = all[q][0] > gmax ? all[q][0] : gmax;
      float total = 0;
      for (int q = 0; q < P; ++q)
        if (all[q][1] > 0) total += all[q][1] * vexp((vf){} + (all[q][0] - gmax))[0];
      scale = j1 > j0 ? vexp((vf){} + (mx - gmax))[0] / total : 0.0f;
    }
    chunk_write(e, j1 - j0, scale, Y + i * N + j0);
  }
  fence();
}

KF_KERNEL(softmax, softmax_block)
