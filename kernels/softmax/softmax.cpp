// softmax for the cpu backend: Y = exp(X - rowmax) / rowsum, row-major (M,N), any M, N >= 1.
// Each block owns a run of consecutive rows (an even share of M; see kf_share_rows in the cpu prelude) and streams
// them as a software pipeline: one sweep over the row length does, at each position j,
//   - the max of row i+1   (its only read from memory: one long contiguous read stream),
//   - e = exp(x - max) of row i into a per-thread fp32 buffer, and its sum (row i is in L2,
//     read by the previous sweep),
//   - y = e * (1/sum) of row i-1, from the same buffer before this sweep overwrites it (the
//     write stream, non-temporal).
// So every sweep reads and writes memory at a steady rate while it computes the exps: memory
// and arithmetic overlap. Three passes over each row, one read and one write of it in memory.
// (The earlier form did max, exp and write one after the other per row: the exp pass ran with
// memory idle and the two streaming passes with the arithmetic units idle, 0.59 of the DRAM
// roof.) A block's first sweep only reads, its last only writes, so blocks should be long (ROWS).
// All sweeps run on VW-float SIMD vectors with ACC independent accumulators; a row's tail is a
// masked vector (padding -inf, so its e is 0).
//
// Few long rows (M < 2 x threads): up to SPLIT blocks share a row (grid x), each taking one
// chunk of every row of its run. After each row's exp sweep they exchange their partial
// (max, sum) through a slot in shared memory and wait for each other (a row barrier); each then
// writes its chunk scaled by exp(max_p - max) / sum in the next sweep. The pool hands out
// blocks in index order and a row's blocks are adjacent, so with at most one block per thread
// sharing a row every block it waits for has a thread: no deadlock.
//
// Parameters (all #defines):
//   VW     SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   ACC    independent vector accumulators per sweep (hides the latency of max/add chains)
//   ROWS   most rows per block (small M still spreads over the threads: see kf_share_rows in the cpu prelude)
//   SPLIT  most blocks that share one row (the grid's x; at most one per thread is used)
//   NT     1: non-temporal stores of Y (where aligned), 0: plain stores
//   PF     prefetch the row being read this many elements ahead (0: leave it to the hardware)
#include <cstdlib>

// The vector helpers (kf_vf, kf_load, kf_store_nt, kf_exp, kf_exchange, ...) are the cpu prelude's.
typedef kf_vf vf;
typedef kf_storage T;

// Whole vectors of Y: streamed past the cache with NT = 1.
static inline void put_v(T* p, vf v) {
  if constexpr (NT) kf_store_nt(p, v);
  else kf_store(p, v);
}

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

#define STEP (KF_VW * ACC)
static constexpr float kNegInf = -__builtin_inff();

// One sweep over n elements (a chunk of three consecutive rows), each part optional:
//   kNext: next_max = the max of xn (the next row, read from memory; prefetched PF ahead)
//   kThis: e = exp(x - mx) for this row (padded to whole vectors), sum = its sum
//   kPrev: yp = e * scale, the previous row, from e as it was before this sweep
template <bool kNext, bool kThis, bool kPrev>
static void sweep(const T* xn, float& next_max, const T* x, float mx, float& sum, T* yp,
                  float scale, float* e, long long n) {
  vf m[ACC], s[ACC];
  for (int a = 0; a < ACC; ++a) m[a] = kf_splat(kNegInf), s[a] = (vf){};
  // Position j, accumulator a; r < KF_VW: the row's tail (r elements).
  auto at = [&](long long j, int a, int r) {
    // Every load before every store of position j: a load after a store whose address has
    // the same low 12 bits (X and Y rows are often 4 KiB multiples apart) waits for it.
    vf xv, ev;
    if constexpr (kNext) {
      if constexpr (PF > 0) __builtin_prefetch(xn + j + PF);
      m[a] = kf_max(m[a], r == KF_VW ? kf_load(xn + j) : kf_load_part(xn + j, r, kNegInf));
    }
    if constexpr (kThis) xv = r == KF_VW ? kf_load(x + j) : kf_load_part(x + j, r, kNegInf);
    if constexpr (kPrev) ev = *(const vf*)(e + j);  // e[j] before kThis overwrites it
    if constexpr (kThis) {
      const vf v = kf_exp(xv - mx);
      *(vf*)(e + j) = v;
      s[a] += v;
    }
    if constexpr (kPrev) {
      if (r == KF_VW) put_v(yp + j, ev * scale);
      else kf_store_part(yp + j, r, ev * scale);
    }
  };
  long long j = 0;
  for (; j + STEP <= n; j += STEP)
#pragma GCC unroll 16
    for (int a = 0; a < ACC; ++a) at(j + a * KF_VW, a, KF_VW);
  for (; j + KF_VW <= n; j += KF_VW) at(j, 0, KF_VW);
  if (j < n) at(j, 0, (int)(n - j));
  for (int a = 1; a < ACC; ++a) m[0] = kf_max(m[0], m[a]), s[0] += s[a];
  if constexpr (kNext) next_max = kf_hmax(m[0]);
  if constexpr (kThis) sum = kf_hsum(s[0]);
}

static void softmax_block(const kf_ctx& ctx, const T* X, T* Y, int M, int N) {
  // Blocks share rows only when rows alone cannot keep the threads busy (kf_share_rows).
  const kf_row_share sh = kf_share_rows(ctx, M, N, ROWS);
  if (!sh.active) return;
  const int p = sh.p, P = sh.P;
  const long long per = sh.per, j0 = sh.j0, j1 = sh.j1, n = j1 - j0, r0 = sh.r0, r1 = sh.r1;
  const T* x = X + r0 * N + j0;  // row i's chunk, i from r0
  // e at half a page from x modulo 4 KiB, so e[j] and x[j] never alias in the low 12 bits.
  float* const buf = scratch(per + KF_VW + 1024);
  const unsigned long long gap = (unsigned long long)x - (unsigned long long)buf;
  float* const e = buf + ((gap + 2048) & 4095 & ~63ull) / 4;
  float mx = kNegInf, next_mx = kNegInf, sum = 0, scale = 0;
  if (n > 0) sweep<true, false, false>(x, mx, nullptr, 0, sum, nullptr, 0, e, n);
  for (long long i = r0; i < r1; ++i, x += N) {
    const bool next = i + 1 < r1, prev = i > r0;
    const T* xn = next ? x + N : nullptr;
    T* yp = prev ? Y + (i - 1) * N + j0 : nullptr;
    if (n == 0) sum = 0;
    else if (next && prev) sweep<true, true, true>(xn, next_mx, x, mx, sum, yp, scale, e, n);
    else if (next) sweep<true, true, false>(xn, next_mx, x, mx, sum, yp, scale, e, n);
    else if (prev) sweep<false, true, true>(xn, next_mx, x, mx, sum, yp, scale, e, n);
    else sweep<false, true, false>(xn, next_mx, x, mx, sum, yp, scale, e, n);
    scale = 1.0f / sum;
    if (P > 1) {  // combine the P partials in a fixed order, the same in every block
      const float mine[2] = {mx, sum};
      float all[KF_SHARE][2];
      kf_exchange<2>(i, p, P, mine, all);
      float gmax = all[0][0];
      for (int q = 1; q < P; ++q) gmax = all[q][0] > gmax ? all[q][0] : gmax;
      float total = 0;
      for (int q = 0; q < P; ++q)
        if (all[q][1] > 0) total += all[q][1] * kf_exp(kf_splat(all[q][0] - gmax))[0];
      scale = n > 0 ? kf_exp(kf_splat(mx - gmax))[0] / total : 0.0f;
    }
    mx = next_mx;
  }
  T* const last = Y + (r1 - 1) * N + j0;
  if (n > 0) sweep<false, false, true>(nullptr, next_mx, nullptr, 0, sum, last, scale, e, n);
  kf_fence();
}

KF_KERNEL(softmax, softmax_block)
