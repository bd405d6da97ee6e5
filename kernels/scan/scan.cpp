// scan for the cpu backend: every problem of kernels/scan/ is one linear recurrence, applied
// step by step in scan order (forward: t = 0..time-1; reverse: t = time-1..0),
//     x = a_t * x + c_t,
// whose coefficients (a_t, c_t) each estimator forms from its own inputs (a struct per problem
// below). Composing steps is associative: (a2, c2) after (a1, c1) = (a2*a1, a2*c1 + c2), so a
// run of steps collapses into one affine map and runs can be evaluated in parallel.
//
// Parallel across batch AND time. Block (bx, by) owns sequences [by*LANES, +LANES) and the bx-th
// CHUNK of steps in scan order; each chunk is split into SUB sub-chunks. Three phases:
//   1. reduce:  each sub-chunk of each sequence composes its steps into one map (A, X);
//               LANES*SUB independent chains keep the FMA pipes busy (a single chain waits on
//               its own latency every step)
//   2. carry:   the value entering the chunk comes from the previous chunk's block (a chained
//               scan across blocks, below); the sub-chunk maps turn it into each sub-chunk's
//               entering value, and the chunk's leaving value is published for the next block
//   3. re-scan: each sub-chunk runs its steps again from its entering value and writes x (its
//               inputs are still in L1/L2 from phase 1)
// With one chunk per sequence (CHUNK >= time) and SUB = 1 a block does phase 3 only: one pass.
//
// Parameters (all #defines):
//   CHUNK  steps of one sequence per block (>= time: no parallelism along time)
//   LANES  sequences per block (independent chains; more lanes, fewer blocks)
//   SUB    sub-chunks per chunk (independent chains along time, for batch 1)
#include <sched.h>

#include <atomic>

typedef float T;

#ifndef LANES  // scan_nstep's spec sets neither: it does not use the scan engine
#define LANES 1
#endif
#ifndef SUB
#define SUB 1
#endif

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
// E provides init(s) (the value entering sequence s), step(i, s, t, a, c) (the coefficients of
// element i = s*time + t) and put(i, x). Loops over lanes and sub-chunks have constant trip
// counts so that the chains live in registers: in the last row of blocks, lanes past the batch
// repeat its last sequence (the same values written twice by one thread, harmless; with a
// stash, only the real lane writes).
template <bool REVERSE, class E>
static void scan_block(const kf_ctx& ctx, const E& e, int batch, int time) {
  const long long nchunks = ctx.grid_dim.x, blocks = nchunks * ctx.grid_dim.y;
  const int k = (int)ctx.block_idx.x;
  const long long linear = ctx.block_idx.y * nchunks + k;
  int seq[LANES];
  long long base[LANES];
  const int lanes = batch - (int)ctx.block_idx.y * LANES;  // real ones, if fewer than LANES
  for (int l = 0; l < LANES; ++l) {
    const int s = (int)ctx.block_idx.y * LANES + l;
    seq[l] = s < batch ? s : batch - 1;
    base[l] = (long long)seq[l] * time;
  }
  // Steps [c0, c1) in scan order; sub-chunk j starts at lo[j]; the first `extra` sub-chunks
  // have `len + 1` steps, the others `len`.
  const int c0 = k * CHUNK, c1 = time - c0 < CHUNK ? time : c0 + CHUNK;
  const int len = (c1 - c0) / SUB, extra = (c1 - c0) % SUB;
  int lo[SUB];
  for (int j = 0; j < SUB; ++j) lo[j] = c0 + j * len + (j < extra ? j : extra);
  auto t_of = [&](int step) { return REVERSE ? time - 1 - step : step; };

  float x[SUB][LANES];  // the value entering each sub-chunk, then the running value
  // Phase 3 for step `st` of sub-chunk j. After a phase 1, estimators with costly c_t (E::kStash)
  // read it back from the output, where phase 1 left it, and recompute only a_t.
  auto rescan = [&](auto after_reduce, int j, int st) __attribute__((always_inline)) {
    const int t = t_of(st);
    for (int l = 0; l < LANES; ++l) {
      const long long i = base[l] + t;
      float a, c;
      if constexpr (decltype(after_reduce)::value && E::kStash) {
        a = e.coef_a(i, t), c = e.stashed(i);
      } else {
        e.step(i, seq[l], t, a, c);
      }
      x[j][l] = a * x[j][l] + c;
      if (!E::kStash || l < lanes) e.put(i, x[j][l]);  // a repeated lane must not overwrite a stash
    }
  };
  const bool chained = nchunks > 1;
  const unsigned ep = chained ? chain::begin(blocks) : 0;
  if (!chained && SUB == 1) {
    for (int l = 0; l < LANES; ++l) x[0][l] = e.init(seq[l]);
  } else {
    float A[SUB][LANES], X[SUB][LANES];  // phase 1: each sub-chunk as one map x -> A*x + X
    for (int j = 0; j < SUB; ++j)
      for (int l = 0; l < LANES; ++l) A[j][l] = 1.0f, X[j][l] = 0.0f;
    auto reduce = [&](int j, int st) __attribute__((always_inline)) {
      const int t = t_of(st);
      for (int l = 0; l < LANES; ++l) {
        float a, c;
        e.step(base[l] + t, seq[l], t, a, c);
        if constexpr (E::kStash) e.stash(base[l] + t, c);
        A[j][l] *= a;
        X[j][l] = a * X[j][l] + c;
      }
    };
    for (int n = 0; n < len; ++n)
      for (int j = 0; j < SUB; ++j) reduce(j, lo[j] + n);
    for (int j = 0; j < extra; ++j) reduce(j, lo[j] + len);
    float in[LANES];  // phase 2: the value entering the chunk, then each sub-chunk
    if (k == 0) {
      for (int l = 0; l < LANES; ++l) in[l] = e.init(seq[l]);
    } else {
      chain::receive(linear - 1, ep, in);
    }
    for (int j = 0; j < SUB; ++j)
      for (int l = 0; l < LANES; ++l) {
        x[j][l] = in[l];
        in[l] = A[j][l] * in[l] + X[j][l];
      }
    if (chained) chain::publish(linear, ep, in);
  }
  auto phase3 = [&](auto after_reduce) {  // the steps again, from the entering values
    for (int n = 0; n < len; ++n)
      for (int j = 0; j < SUB; ++j) rescan(after_reduce, j, lo[j] + n);
    for (int j = 0; j < extra; ++j) rescan(after_reduce, j, lo[j] + len);
  };
  if (!chained && SUB == 1) phase3(std::false_type{});
  else phase3(std::true_type{});
  if (chained) chain::end(blocks);
}

// ---- the problems' coefficients ----------------------------------------------------------------
// V[t+1] of step t, with V[time] = boot. Both loads are always in bounds, so the choice is a
// select, not a branch in every chain of the unrolled loops.
static inline float next_v(const T* v, const T* boot, long long i, int s, int t, int time) {
  const bool last = t + 1 >= time;
  const float inside = v[last ? i : i + 1], at_end = boot[s];
  return last ? at_end : inside;
}
#define NEXT_V(v, boot, i, s, t, time) next_v(v, boot, i, s, t, time)

// kStash: phase 3 reads c_t back from the output (coef_a, stash, stashed) instead of forming it
// again; worth it where c_t costs more than a load.
struct Linear {  // x[t] = a[t]*x[t-1 or t+1] + b[t], entering value 0
  static constexpr bool kStash = false;
  const T *a, *b;
  T* x;
  float init(int) const { return 0.0f; }
  void step(long long i, int, int, float& ai, float& ci) const { ai = a[i], ci = b[i]; }
  void put(long long i, float v) const { x[i] = v; }
};

struct DiscountedReturn {  // G[t] = r[t] + gamma*(1-done[t])*G[t+1], G[time] = boot
  static constexpr bool kStash = false;
  const T *r, *done, *boot;
  T* ret;
  float gamma;
  float init(int s) const { return boot[s]; }
  void step(long long i, int, int, float& a, float& c) const {
    a = gamma * (1.0f - done[i]), c = r[i];
  }
  void put(long long i, float v) const { ret[i] = v; }
};

struct Gae {  // A[t] = delta[t] + gamma*lambda*(1-done[t])*A[t+1], A[time] = 0
  const T *r, *v, *done, *boot;
  T* adv;
  float gamma, lambda;
  float init(int) const { return 0.0f; }
  void step(long long i, int s, int t, float& a, float& c) const {
    const float g = gamma * (1.0f - done[i]);
    c = r[i] + g * NEXT_V(v, boot, i, s, t, time) - v[i];
    a = g * lambda;
  }
  void put(long long i, float x) const { adv[i] = x; }
  static constexpr bool kStash = true;
  float coef_a(long long i, int) const { return gamma * (1.0f - done[i]) * lambda; }
  void stash(long long i, float c) const { adv[i] = c; }
  float stashed(long long i) const { return adv[i]; }
  int time;
};

struct TdLambda {  // G[t] = r[t] + gamma*(1-done[t])*((1-lambda)*V[t+1] + lambda*G[t+1])
  const T *r, *v, *done, *boot;
  T* ret;
  float gamma, lambda;
  float init(int s) const { return boot[s]; }
  void step(long long i, int s, int t, float& a, float& c) const {
    const float g = gamma * (1.0f - done[i]);
    c = r[i] + g * (1.0f - lambda) * NEXT_V(v, boot, i, s, t, time);
    a = g * lambda;
  }
  void put(long long i, float x) const { ret[i] = x; }
  static constexpr bool kStash = true;
  float coef_a(long long i, int) const { return gamma * (1.0f - done[i]) * lambda; }
  void stash(long long i, float c) const { ret[i] = c; }
  float stashed(long long i) const { return ret[i]; }
  int time;
};

struct VTrace {  // x = vs - V: x[t] = rho*(r + g*V[t+1] - V[t]) + g*c*x[t+1], g = gamma*(1-done)
  const T *r, *v, *done, *boot, *ratio;
  T* vs;
  float gamma, lambda, rho_bar, c_bar;
  int time;
  float init(int) const { return 0.0f; }
  void step(long long i, int s, int t, float& a, float& c) const {
    const float g = gamma * (1.0f - done[i]), w = ratio[i];
    c = (w < rho_bar ? w : rho_bar) * (r[i] + g * NEXT_V(v, boot, i, s, t, time) - v[i]);
    a = g * lambda * (w < c_bar ? w : c_bar);
  }
  void put(long long i, float x) const { vs[i] = v[i] + x; }
  static constexpr bool kStash = true;
  float coef_a(long long i, int) const {
    const float w = ratio[i];
    return gamma * (1.0f - done[i]) * lambda * (w < c_bar ? w : c_bar);
  }
  void stash(long long i, float c) const { vs[i] = c; }
  float stashed(long long i) const { return vs[i]; }
};

// Retrace (TB = false, trace lambda*min(1, ratio)) and TB(lambda) (TB = true, trace lambda*pi):
// Q'[t] = r + g*(EQ[t+1] - c[t+1]*Q[t+1]) + g*c[t+1]*Q'[t+1]; the last step: r + g*boot.
template <bool TB>
struct OffPolicyQ {
  const T *r, *q, *eq, *done, *boot, *w;
  T* qret;
  float gamma, lambda;
  int time;
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
  void put(long long i, float x) const { qret[i] = x; }
  static constexpr bool kStash = true;
  float coef_a(long long i, int t) const {
    const bool last = t + 1 >= time;
    const float next_w = w[last ? i : i + 1];
    const float trace = lambda * (TB ? next_w : (next_w < 1.0f ? next_w : 1.0f));
    return last ? 0.0f : gamma * (1.0f - done[i]) * trace;
  }
  void stash(long long i, float c) const { qret[i] = c; }
  float stashed(long long i) const { return qret[i]; }
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

// n-step returns are a windowed sum, not a recurrence (README.md): block (bx, s) writes steps
// [bx*CHUNK, +CHUNK) of sequence s, each from its own window of min(n, time-t) steps.
static void nstep(const kf_ctx& ctx, const T* r, const T* v, const T* done, const T* boot, T* ret,
                  int batch, int time, int n, float gamma) {
  const int s = (int)ctx.block_idx.y, t0 = (int)ctx.block_idx.x * CHUNK;
  const int t1 = time - t0 < CHUNK ? time : t0 + CHUNK;
  const T *rs = r + (long long)s * time, *vs = v + (long long)s * time, *ds = done + (long long)s * time;
  for (int t = t0; t < t1; ++t) {
    const int h = time - t < n ? time - t : n;
    float g = 0.0f, discount = 1.0f;
    for (int k = 0; k < h; ++k) {
      g += discount * rs[t + k];
      discount *= gamma * (1.0f - ds[t + k]);
    }
    ret[(long long)s * time + t] = g + discount * (t + h < time ? vs[t + h] : boot[s]);
  }
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
