// scan for the cpu backend: every problem of kernels/scan/ is one linear recurrence, applied
// step by step in scan order (forward: t = 0..time-1; reverse: t = time-1..0),
//     x = a_t * x + c_t,
// whose coefficients (a_t, c_t) each estimator forms from its own inputs (a struct per problem
// below). Composing steps is associative: (a2, c2) after (a1, c1) = (a2*a1, a2*c1 + c2), so a
// run of steps collapses into one affine map and runs can be evaluated in parallel.
//
// Vectorized ALONG TIME, one pass. A sequence is walked VEC steps at a time: one vector load per
// input forms the VEC steps' coefficients, a scan in registers (log2(VEC) rounds of shift and
// compose) turns them into the maps from the vector's entry to each of its steps, and the value
// entering the vector turns those into VEC outputs at once. The only dependent chain left is one
// scalar multiply-add per VEC steps (the value entering the next vector), so a single sequence
// runs at the machine's throughput, not at one FMA latency per step, and the loads and stores are
// whole contiguous vectors: no need to interleave sequences, no transposes. Outputs larger than
// STREAM_MB MiB are written with streaming stores (they would only evict the inputs from cache,
// and an ordinary store first reads the line it writes: a third more traffic for scan.linear).
//
// Parallel across batch AND time. Block (bx, by) owns sequences [by*LANES, +LANES) and the bx-th
// of grid.x equal chunks of their steps in scan order. With one chunk per sequence (many
// sequences: the spec's grid gives grid.x = 1) a block makes one pass. With several (few long
// sequences), two phases:
//   1. reduce: each chunk composes its steps into one map (A, X) (the same pass, no stores)
//   2. carry + scan: the value entering the chunk comes from the previous chunk's block (a chained
//      scan across blocks, below); the chunk's leaving value A*in + X is published at once for
//      the next block, then the chunk is scanned from its entering value and written (its inputs
//      are still in L1/L2 from phase 1).
//
// Parameters (all #defines):
//   VEC       floats per vector (8: AVX2, 16: AVX-512; GCC vector extensions, so any width builds)
//   LANES     sequences per block, one after another (fewer, larger blocks)
//   CHUNK     the fewest steps worth a block of their own along time (used by the spec's grid)
//   PAR       the blocks a launch aims for (the cores); the spec's grid splits sequences along
//             time only while there are fewer than PAR blocks of sequences
//   STREAM_MB outputs of at least this many MiB are written with streaming stores
#include <immintrin.h>
#include <sched.h>

#include <atomic>
#include <cstdint>

typedef float T;

#ifndef VEC  // scan_nstep's spec sets none of these: it does not use the scan engine
#define VEC 8
#endif
#ifndef LANES
#define LANES 1
#endif
#ifndef PF
#define PF 0
#endif
#ifndef STREAM_MB
#define STREAM_MB 8
#endif

// ---- vectors ------------------------------------------------------------------------------------
typedef float V __attribute__((vector_size(4 * VEC)));

static inline V load(const T* p) {  // unaligned
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
static inline V splat(float x) { return V{} + x; }
static inline V vmin(V x, float y) { return x < splat(y) ? x : splat(y); }

// p is aligned to the vector's size (the engine makes it so).
static inline void store(T* p, V v, bool stream) {
  if (!stream) {
    __builtin_memcpy(p, &v, sizeof v);
    return;
  }
#if VEC == 16 && defined(__AVX512F__)
  _mm512_stream_ps(p, (__m512)v);
#elif VEC == 8 && defined(__AVX__)
  _mm256_stream_ps(p, (__m256)v);
#else
  for (int j = 0; j < VEC; j += 4) _mm_stream_ps(p + j, __m128{v[j], v[j + 1], v[j + 2], v[j + 3]});
#endif
}

// v moved by D lanes toward the end of the scan (up for forward, down for reverse), `fill` in the
// lanes left empty.
template <int D, bool REVERSE, int... I>
static inline V shifted(V v, V fill, std::integer_sequence<int, I...>) {
  return __builtin_shufflevector(
      v, fill, (REVERSE ? (I + D < VEC ? I + D : VEC + I) : (I >= D ? I - D : VEC + I))...);
}

// The VEC values following p[0..VEC-1] (element t+1 of each step t): p[1..VEC], or where the
// vector ends the sequence (AT_END), p[1..VEC-1] and then `fill` for the step past the end.
template <bool AT_END>
static inline V next(const T* p, float fill) {
  if constexpr (AT_END)
    return shifted<1, true>(load(p), splat(fill), std::make_integer_sequence<int, VEC>{});
  else
    return load(p + 1);
}

// In-register scan: on entry (a, c) are VEC single steps; on return lane i holds the map from the
// vector's entry through step i, composed in scan order (Hillis-Steele: round D composes each
// lane with the lane D earlier in the scan; empty lanes take the identity map (1, 0)).
template <bool REVERSE, int D = 1>
static inline void prefix(V& a, V& c) {
  if constexpr (D < VEC) {
    constexpr auto lanes = std::make_integer_sequence<int, VEC>{};
    const V a_earlier = shifted<D, REVERSE>(a, splat(1.0f), lanes);
    const V c_earlier = shifted<D, REVERSE>(c, V{}, lanes);
    c = a * c_earlier + c;
    a = a * a_earlier;
    prefix<REVERSE, 2 * D>(a, c);
  }
}

// ---- the chain across blocks -------------------------------------------------------------------
// The pool hands out blocks in increasing linear index, and chunk bx of a row waits only for
// chunk bx-1 (linear index one less), which was handed out before it and never waits for a later
// block: no deadlock with any number of threads. A launch's slots are told apart from older ones
// by an epoch that the last block of each launch advances.
namespace chain {

struct Slot {
  std::atomic<unsigned> tag;  // the epoch of the launch that wrote carry
  float carry[LANES];
};
static std::atomic<long long> started{0}, finished{0};
static std::atomic<unsigned> epoch{1}, ready{0};
static Slot* slots = nullptr;
static long long capacity = 0;

template <class Cond>
static void wait_until(Cond cond) {
  for (int spins = 0; !cond(); ++spins) {
    if (spins < 256) __builtin_ia32_pause();
    else sched_yield();  // the machine may have fewer cores than the pool has threads
  }
}

// Called first by every block of a chained launch of `blocks` blocks: the launch's epoch, once
// the slot table is large enough.
static unsigned begin(long long blocks) {
  const unsigned ep = epoch.load(std::memory_order_acquire);
  if (started.fetch_add(1, std::memory_order_acq_rel) == 0) {
    if (capacity < blocks) {
      delete[] slots;
      slots = new Slot[blocks]();
      capacity = blocks;
    }
    ready.store(ep, std::memory_order_release);
  } else {
    wait_until([&] { return ready.load(std::memory_order_acquire) == ep; });
  }
  return ep;
}

static void publish(long long slot, unsigned ep, const float* carry) {
  for (int l = 0; l < LANES; ++l) slots[slot].carry[l] = carry[l];
  slots[slot].tag.store(ep, std::memory_order_release);
}

static void receive(long long slot, unsigned ep, float* carry) {
  wait_until([&] { return slots[slot].tag.load(std::memory_order_acquire) == ep; });
  for (int l = 0; l < LANES; ++l) carry[l] = slots[slot].carry[l];
}

static void end(long long blocks) {
  if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == blocks) {
    started.store(0);
    finished.store(0);
    epoch.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace chain

// ---- the engine ---------------------------------------------------------------------------------
// E provides, for element i = s*time + t of sequence s:
//   init(s)                 the value entering the scan
//   step(i, s, t, a, c)     step t's coefficients, any t
//   vstep<AT_END>(i, s, a, c)  steps t..t+VEC-1 at once; reads the elements after them with
//                           next<AT_END>: AT_END when t + VEC == time (the bootstrap follows)
//   out(i, x), vout(i, x)   the value written for running value x (x itself, or V + x)
//   dst                     the output tensor
//
// Applies steps [c0, c1) of sequence s (time indices, walked in scan order) to the running map
// x -> A*x + X; with STORE, writes every step's output (X is then the running value). Vectors
// cover [v0, v1): v0 is the first step whose output address is vector-aligned (streaming stores
// need it); the steps around them (fewer than VEC on each side) make a partial vector each.
template <bool REVERSE, bool STORE, class E>
static inline void run_steps(const E& e, int s, int time, int c0, int c1, bool stream, float& A,
                             float& X) {
  const long long base = (long long)s * time;
  const int misaligned = (int)(((std::uintptr_t)(e.dst + base + c0) / sizeof(T)) % VEC);
  int v0 = c0 + (VEC - misaligned) % VEC;
  if (v0 > c1) v0 = c1;
  const int v1 = v0 + (c1 - v0) / VEC * VEC;
  const bool ends = v1 == time && v1 > v0;  // the last vector holds step time-1
  const int vn = ends ? v1 - VEC : v1;       // the vectors before it

  const int last = REVERSE ? 0 : VEC - 1;  // the lane that ends a vector in scan order
  auto vector = [&](int t, auto at_end) __attribute__((always_inline)) {
    V a, c;
    if constexpr (PF > 0) e.prefetch(base + t + (REVERSE ? -PF : PF));
    e.template vstep<decltype(at_end)::value>(base + t, s, a, c);
    prefix<REVERSE>(a, c);
    if constexpr (STORE) store(e.dst + base + t, e.vout(base + t, a * X + c), stream);
    A *= a[last];
    X = a[last] * X + c[last];
  };
  // Steps [p0, p1), at most VEC of them, as one vector whose lanes past p1 hold the identity map
  // (1, 0): the steps' coefficients are formed one by one (independent work), but they are still
  // composed in registers, not by a chain of dependent multiply-adds.
  auto partial = [&](int p0, int p1) __attribute__((always_inline)) {
    if (p0 >= p1) return;
    float a[VEC], c[VEC];
    for (int j = 0; j < VEC; ++j) {
      a[j] = 1.0f, c[j] = 0.0f;
      if (p0 + j < p1) e.step(base + p0 + j, s, p0 + j, a[j], c[j]);
    }
    V av = load(a), cv = load(c);
    prefix<REVERSE>(av, cv);
    if constexpr (STORE) {
      const V x = av * X + cv;
      for (int j = 0; j < p1 - p0; ++j) e.dst[base + p0 + j] = e.out(base + p0 + j, x[j]);
    }
    A *= av[last];
    X = av[last] * X + cv[last];
  };
  if (!REVERSE) {
    partial(c0, v0);
    for (int t = v0; t < vn; t += VEC) vector(t, std::false_type{});
    if (ends) vector(vn, std::true_type{});
    partial(v1, c1);
  } else {
    partial(v1, c1);
    if (ends) vector(vn, std::true_type{});
    for (int t = vn - VEC; t >= v0; t -= VEC) vector(t, std::false_type{});
    partial(c0, v0);
  }
}

template <bool REVERSE, class E>
static void scan_block(const kf_ctx& ctx, const E& e, int batch, int time) {
  const long long nchunks = ctx.grid_dim.x, blocks = nchunks * ctx.grid_dim.y;
  const int k = (int)ctx.block_idx.x, s0 = (int)ctx.block_idx.y * LANES;
  const int lanes = batch - s0 < LANES ? batch - s0 : LANES;
  // Chunk k: steps [lo, hi) in scan order, whole vectors long; time indices [c0, c1).
  const int len = (int)(((time + nchunks - 1) / nchunks + VEC - 1) / VEC * VEC);
  const int lo = k * len < time ? k * len : time, hi = time - lo < len ? time : lo + len;
  const int c0 = REVERSE ? time - hi : lo, c1 = REVERSE ? time - lo : hi;
  const bool stream = (long long)batch * time * (long long)sizeof(T) >= (long long)STREAM_MB << 20;
  float x[LANES] = {};  // the value entering each sequence's chunk
  if (nchunks == 1) {
    for (int j = 0; j < lanes; ++j) {
      const int l = REVERSE ? lanes - 1 - j : j;
      float A = 1.0f;
      x[l] = e.init(s0 + l);
      run_steps<REVERSE, true>(e, s0 + l, time, c0, c1, stream, A, x[l]);
    }
  } else {
    const long long linear = ctx.block_idx.y * nchunks + k;
    const unsigned ep = chain::begin(blocks);
    float A[LANES], X[LANES] = {}, leaving[LANES] = {};
    for (int l = 0; l < lanes; ++l) {  // phase 1
      A[l] = 1.0f;
      run_steps<REVERSE, false>(e, s0 + l, time, c0, c1, stream, A[l], X[l]);
    }
    if (k == 0) {
      for (int l = 0; l < lanes; ++l) x[l] = e.init(s0 + l);
    } else {
      chain::receive(linear - 1, ep, x);
    }
    for (int l = 0; l < lanes; ++l) leaving[l] = A[l] * x[l] + X[l];
    chain::publish(linear, ep, leaving);
    for (int l = 0; l < lanes; ++l) {  // phase 2
      float unused = 1.0f;
      run_steps<REVERSE, true>(e, s0 + l, time, c0, c1, stream, unused, x[l]);
    }
    chain::end(blocks);
  }
  if (stream) _mm_sfence();  // streaming stores are weakly ordered: done before the block is
}

// ---- the problems' coefficients ----------------------------------------------------------------
// V[t+1] of step t, with V[time] = boot. Both loads are always in bounds, so the choice is a
// select, not a branch.
static inline float next_v(const T* v, const T* boot, long long i, int s, int t, int time) {
  const bool last = t + 1 >= time;
  const float inside = v[last ? i : i + 1], at_end = boot[s];
  return last ? at_end : inside;
}

struct Linear {  // x[t] = a[t]*x[t-1 or t+1] + b[t], entering value 0
  const T *a, *b;
  T* dst;
  void prefetch(long long i) const { __builtin_prefetch(a + i); __builtin_prefetch(b + i); }
  float init(int) const { return 0.0f; }
  void step(long long i, int, int, float& ai, float& ci) const { ai = a[i], ci = b[i]; }
  template <bool>
  void vstep(long long i, int, V& ai, V& ci) const { ai = load(a + i), ci = load(b + i); }
  float out(long long, float x) const { return x; }
  V vout(long long, V x) const { return x; }
};

struct DiscountedReturn {  // G[t] = r[t] + gamma*(1-done[t])*G[t+1], G[time] = boot
  const T *r, *done, *boot;
  T* dst;
  float gamma;
  void prefetch(long long i) const { __builtin_prefetch(r + i); __builtin_prefetch(done + i); }
  float init(int s) const { return boot[s]; }
  void step(long long i, int, int, float& a, float& c) const {
    a = gamma * (1.0f - done[i]), c = r[i];
  }
  template <bool>
  void vstep(long long i, int, V& a, V& c) const {
    a = gamma * (1.0f - load(done + i)), c = load(r + i);
  }
  float out(long long, float x) const { return x; }
  V vout(long long, V x) const { return x; }
};

struct Gae {  // A[t] = delta[t] + gamma*lambda*(1-done[t])*A[t+1], A[time] = 0
  const T *r, *v, *done, *boot;
  T* dst;
  float gamma, lambda;
  int time;
  void prefetch(long long i) const { __builtin_prefetch(r + i); __builtin_prefetch(v + i); __builtin_prefetch(done + i); }
  float init(int) const { return 0.0f; }
  void step(long long i, int s, int t, float& a, float& c) const {
    const float g = gamma * (1.0f - done[i]);
    c = r[i] + g * next_v(v, boot, i, s, t, time) - v[i];
    a = g * lambda;
  }
  template <bool AT_END>
  void vstep(long long i, int s, V& a, V& c) const {
    const V g = gamma * (1.0f - load(done + i));
    c = load(r + i) + g * next<AT_END>(v + i, AT_END ? boot[s] : 0.0f) - load(v + i);
    a = g * lambda;
  }
  float out(long long, float x) const { return x; }
  V vout(long long, V x) const { return x; }
};

struct TdLambda {  // G[t] = r[t] + gamma*(1-done[t])*((1-lambda)*V[t+1] + lambda*G[t+1])
  const T *r, *v, *done, *boot;
  T* dst;
  float gamma, lambda;
  int time;
  void prefetch(long long i) const { __builtin_prefetch(r + i); __builtin_prefetch(v + i); __builtin_prefetch(done + i); }
  float init(int s) const { return boot[s]; }
  void step(long long i, int s, int t, float& a, float& c) const {
    const float g = gamma * (1.0f - done[i]);
    c = r[i] + g * (1.0f - lambda) * next_v(v, boot, i, s, t, time);
    a = g * lambda;
  }
  template <bool AT_END>
  void vstep(long long i, int s, V& a, V& c) const {
    const V g = gamma * (1.0f - load(done + i));
    c = load(r + i) + g * (1.0f - lambda) * next<AT_END>(v + i, AT_END ? boot[s] : 0.0f);
    a = g * lambda;
  }
  float out(long long, float x) const { return x; }
  V vout(long long, V x) const { return x; }
};

struct VTrace {  // x = vs - V: x[t] = rho*(r + g*V[t+1] - V[t]) + g*c*x[t+1], g = gamma*(1-done)
  const T *r, *v, *done, *boot, *ratio;
  T* dst;
  float gamma, lambda, rho_bar, c_bar;
  int time;
  void prefetch(long long i) const { __builtin_prefetch(r + i); __builtin_prefetch(v + i); __builtin_prefetch(done + i); __builtin_prefetch(ratio + i); }
  float init(int) const { return 0.0f; }
  void step(long long i, int s, int t, float& a, float& c) const {
    const float g = gamma * (1.0f - done[i]), w = ratio[i];
    c = (w < rho_bar ? w : rho_bar) * (r[i] + g * next_v(v, boot, i, s, t, time) - v[i]);
    a = g * lambda * (w < c_bar ? w : c_bar);
  }
  template <bool AT_END>
  void vstep(long long i, int s, V& a, V& c) const {
    const V g = gamma * (1.0f - load(done + i)), w = load(ratio + i);
    c = vmin(w, rho_bar) * (load(r + i) + g * next<AT_END>(v + i, AT_END ? boot[s] : 0.0f) - load(v + i));
    a = g * lambda * vmin(w, c_bar);
  }
  float out(long long i, float x) const { return v[i] + x; }
  V vout(long long i, V x) const { return load(v + i) + x; }
};

// Retrace (TB = false, trace lambda*min(1, ratio)) and TB(lambda) (TB = true, trace lambda*pi):
// Q'[t] = r + g*(EQ[t+1] - c[t+1]*Q[t+1]) + g*c[t+1]*Q'[t+1]; the last step: r + g*boot.
template <bool TB>
struct OffPolicyQ {
  const T *r, *q, *eq, *done, *boot, *w;
  T* dst;
  float gamma, lambda;
  int time;
  void prefetch(long long i) const { __builtin_prefetch(r + i); __builtin_prefetch(q + i); __builtin_prefetch(eq + i); __builtin_prefetch(done + i); __builtin_prefetch(w + i); }
  float init(int) const { return 0.0f; }
  void step(long long i, int s, int t, float& a, float& c) const {
    const float g = gamma * (1.0f - done[i]);
    if (t + 1 < time) {
      const float trace = lambda * (TB ? w[i + 1] : (w[i + 1] < 1.0f ? w[i + 1] : 1.0f));
      a = g * trace;
      c = r[i] + g * (eq[i + 1] - trace * q[i + 1]);
    } else {
      a = 0.0f;
      c = r[i] + g * boot[s];
    }
  }
  // Past the end: trace 0 (a = 0) and EQ = boot make the general step the last one, r + g*boot.
  template <bool AT_END>
  void vstep(long long i, int s, V& a, V& c) const {
    const V g = gamma * (1.0f - load(done + i)), next_w = next<AT_END>(w + i, 0.0f);
    const V trace = lambda * (TB ? next_w : vmin(next_w, 1.0f));
    a = g * trace;
    c = load(r + i) + g * (next<AT_END>(eq + i, AT_END ? boot[s] : 0.0f) - trace * next<AT_END>(q + i, 0.0f));
  }
  float out(long long, float x) const { return x; }
  V vout(long long, V x) const { return x; }
};

// ---- entry points: the problem's ABI (tensors, sizes, scalars) ---------------------------------
static void linear(const kf_ctx& c, const T* a, const T* b, T* x, int batch, int time) {
  scan_block<false>(c, Linear{a, b, x}, batch, time);
}
static void linear_rev(const kf_ctx& c, const T* a, const T* b, T* x, int batch, int time) {
  scan_block<true>(c, Linear{a, b, x}, batch, time);
}
static void discounted_return(const kf_ctx& c, const T* r, const T* done, const T* boot, T* ret,
                              int batch, int time, float gamma) {
  scan_block<true>(c, DiscountedReturn{r, done, boot, ret, gamma}, batch, time);
}
static void gae(const kf_ctx& c, const T* r, const T* v, const T* done, const T* boot, T* adv,
                int batch, int time, float gamma, float lambda) {
  scan_block<true>(c, Gae{r, v, done, boot, adv, gamma, lambda, time}, batch, time);
}
static void td_lambda(const kf_ctx& c, const T* r, const T* v, const T* done, const T* boot,
                      T* ret, int batch, int time, float gamma, float lambda) {
  scan_block<true>(c, TdLambda{r, v, done, boot, ret, gamma, lambda, time}, batch, time);
}

static void vtrace(const kf_ctx& c, const T* r, const T* v, const T* done, const T* boot,
                   const T* ratio, T* vs, int batch, int time, float gamma, float lambda,
                   float rho_bar, float c_bar) {
  scan_block<true>(c, VTrace{r, v, done, boot, ratio, vs, gamma, lambda, rho_bar, c_bar, time},
                   batch, time);
}
static void retrace(const kf_ctx& c, const T* r, const T* q, const T* eq, const T* done,
                    const T* boot, const T* ratio, T* qret, int batch, int time, float gamma,
                    float lambda) {
  scan_block<true>(c, OffPolicyQ<false>{r, q, eq, done, boot, ratio, qret, gamma, lambda, time},
                   batch, time);
}
static void tree_backup(const kf_ctx& c, const T* r, const T* q, const T* eq, const T* done,
                        const T* boot, const T* pi, T* qret, int batch, int time, float gamma,
                        float lambda) {
  scan_block<true>(c, OffPolicyQ<true>{r, q, eq, done, boot, pi, qret, gamma, lambda, time},
                   batch, time);
}

// n-step returns are a windowed sum, not a recurrence (README.md): block (bx, by) writes steps
// [bx*CHUNK, +CHUNK) of sequences [by*LANES, +LANES) (one contiguous range of memory when a chunk
// is the whole sequence: long streams for the prefetcher), each step from its own window of
// min(n, time-t) steps; the windows are independent, so VEC of them are summed at once.
static void nstep(const kf_ctx& ctx, const T* r, const T* v, const T* done, const T* boot, T* ret,
                  int batch, int time, int n, float gamma) {
  const int s0 = (int)ctx.block_idx.y * LANES, t0 = (int)ctx.block_idx.x * CHUNK;
  const int s1 = batch - s0 < LANES ? batch : s0 + LANES, t1 = time - t0 < CHUNK ? time : t0 + CHUNK;
  const bool stream = (long long)batch * time * (long long)sizeof(T) >= (long long)STREAM_MB << 20;
  for (int s = s0; s < s1; ++s) {
    const long long base = (long long)s * time;
    // Streaming stores need whole aligned vectors: t steps by VEC from a multiple of CHUNK, so a
    // sequence's vectors are either all aligned or none is.
    const bool aligned = (std::uintptr_t)(ret + base + t0) % sizeof(V) == 0;
    const T *rs = r + base, *vs = v + base, *ds = done + base;
    int t = t0;
    // Whole windows (V[t+n] inside the sequence), VEC outputs at once: lane j sums the window of
    // step t+j in the same order as the loop below.
    for (; t + VEC <= t1 && t + VEC - 1 + n < time; t += VEC) {
      if constexpr (PF > 0) __builtin_prefetch(rs + t + PF), __builtin_prefetch(vs + t + PF), __builtin_prefetch(ds + t + PF);
      V g = V{}, discount = splat(1.0f);
      for (int k = 0; k < n; ++k) {
        g += discount * load(rs + t + k);
        discount *= gamma * (1.0f - load(ds + t + k));
      }
      store(ret + base + t, g + discount * load(vs + t + n), stream && aligned);
    }
    for (; t < t1; ++t) {
      const int h = time - t < n ? time - t : n;
      float g = 0.0f, discount = 1.0f;
      for (int k = 0; k < h; ++k) {
        g += discount * rs[t + k];
        discount *= gamma * (1.0f - ds[t + k]);
      }
      ret[base + t] = g + discount * (t + h < time ? vs[t + h] : boot[s]);
    }
  }
  if (stream) _mm_sfence();
}

KF_KERNEL(scan_linear, linear)
KF_KERNEL(scan_linear_rev, linear_rev)
KF_KERNEL(scan_discounted_return, discounted_return)
KF_KERNEL(scan_gae, gae)
KF_KERNEL(scan_td_lambda, td_lambda)
KF_KERNEL(scan_vtrace, vtrace)
KF_KERNEL(scan_retrace, retrace)
KF_KERNEL(scan_tree_backup, tree_backup)
KF_KERNEL(scan_nstep, nstep)
