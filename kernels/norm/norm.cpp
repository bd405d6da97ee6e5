// rmsnorm and layernorm for the cpu backend (two entries, one body), row-major (M,N), any M, N:
//   rmsnorm:   Y = X / sqrt(mean(X^2) + eps) * gamma
//   layernorm: Y = (X - mean) / sqrt(var + eps) * gamma + beta
// layernorm is two-pass (the mean, then the sum of squared deviations from it: stable where
// E[x^2] - E[x]^2 cancels), rmsnorm one pass (a sum of squares); then the output pass. Each
// block owns a run of consecutive rows (an even share of M over the grid's y) and streams them
// as a software pipeline: one sweep over the row length does, at each position j,
//   - layernorm: the sum of row i+2 (its only read from memory),
//   - the squared deviations of row i+1 from its mean (rmsnorm: its squares, and this is its
//     read from memory; layernorm: row i+1 is in L2 since the previous sweep),
//   - the output of row i (in L2), non-temporal stores.
// So every sweep reads and writes memory at a steady rate, in long contiguous streams: DRAM
// sees each byte once, and the passes that re-read a row find it in L2. (The earlier form did
// the passes one after the other per row: bursts of reads, then bursts of writes.) A block's
// first sweeps only read and its last only writes, so blocks should be long (ROWS). All sweeps
// run on VW-float SIMD vectors with ACC independent accumulators; a row's tail is a masked
// vector (padding that adds 0).
//
// Few long rows (M < 2 x threads): up to SPLIT blocks share a row (grid x), each one chunk of
// every row of its run. After a row's deviations sweep they exchange partials (count, mean, sum
// of squared deviations; Chan et al.'s pairwise combination) through a slot in shared memory
// and wait for each other (a row barrier). The pool hands out blocks in index order and a
// row's blocks are adjacent, so with at most one block per thread sharing a row every block it
// waits for has a thread: no deadlock.
//
// Parameters (all #defines):
//   VW     SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   ACC    independent vector accumulators per sweep
//   ROWS   most rows per block (the grid's y is at least min(M, 16), so small M still spreads
//          over the threads)
//   SPLIT  most blocks that share one row (the grid's x; at most one per thread is used)
//   NT     1: non-temporal stores of Y (where aligned), 0: plain stores
//   PF     prefetch the row being read from memory this many elements ahead (0: the hardware's)
#include <cmath>

// The vector helpers (kf_vf, kf_load, kf_store_nt, kf_exchange, ...) are the cpu prelude's.
typedef kf_vf vf;
typedef kf_storage T;

// Whole vectors of Y: streamed past the cache with NT = 1.
static inline void put_v(T* p, vf v) {
  if constexpr (NT) kf_store_nt(p, v);
  else kf_store(p, v);
}

#define STEP (KF_VW * ACC)

// What one sweep does to its three rows (each part optional), over n elements:
struct Sweep {
  const T* xs;  // kSum: this row's sum goes to `sum` (layernorm's first read of a row)
  const T* xd;  // kDev: the sum of (x - c)^2 goes to `dev` (rmsnorm: c = 0, the first read)
  float c;
  const T* xo;  // kOut: y = (x - mu) * inv * g (+ b)
  float mu, inv;
  T* y;
  float sum, dev;
};

template <bool kCentered, bool kSum, bool kDev, bool kOut>
static void sweep(Sweep& w, const T* g, const T* b, long long n) {
  vf s[ACC], d[ACC];
  for (int a = 0; a < ACC; ++a) s[a] = d[a] = (vf){};
  const T* first = kCentered ? w.xs : w.xd;  // the row read from memory
  // Position j, accumulator a; r < KF_VW: the row's tail (r elements).
  auto at = [&](long long j, int a, int r) {
    if constexpr (PF > 0 && (kCentered ? kSum : kDev)) __builtin_prefetch(first + j + PF);
    if constexpr (kSum) s[a] += r == KF_VW ? kf_load(w.xs + j) : kf_load_part(w.xs + j, r, 0);
    if constexpr (kDev) {
      const vf v = (r == KF_VW ? kf_load(w.xd + j) : kf_load_part(w.xd + j, r, w.c)) - w.c;
      d[a] += v * v;
    }
    if constexpr (kOut) {
      if (r == KF_VW) {
        vf v = (kf_load(w.xo + j) - w.mu) * w.inv * kf_load(g + j);
        if constexpr (kCentered) v += kf_load(b + j);
        put_v(w.y + j, v);
      } else {
        vf v = (kf_load_part(w.xo + j, r, 0) - w.mu) * w.inv * kf_load_part(g + j, r, 0);
        if constexpr (kCentered) v += kf_load_part(b + j, r, 0);
        kf_store_part(w.y + j, r, v);
      }
    }
  };
  long long j = 0;
  for (; j + STEP <= n; j += STEP)
#pragma GCC unroll 16
    for (int a = 0; a < ACC; ++a) at(j + a * KF_VW, a, KF_VW);
  for (; j + KF_VW <= n; j += KF_VW) at(j, 0, KF_VW);
  if (j < n) at(j, 0, (int)(n - j));
  for (int a = 1; a < ACC; ++a) s[0] += s[a], d[0] += d[a];
  if constexpr (kSum) w.sum = kf_hsum(s[0]);
  if constexpr (kDev) w.dev = kf_hsum(d[0]);
}

// The sweep with the parts present in w (a non-null row pointer).
template <bool kCentered>
static void sweep_parts(Sweep& w, const T* g, const T* b, long long n) {
  switch ((w.xs ? 4 : 0) | (w.xd ? 2 : 0) | (w.xo ? 1 : 0)) {
    case 1: return sweep<kCentered, false, false, true>(w, g, b, n);
    case 2: return sweep<kCentered, false, true, false>(w, g, b, n);
    case 3: return sweep<kCentered, false, true, true>(w, g, b, n);
    case 4: return sweep<kCentered, true, false, false>(w, g, b, n);
    case 5: return sweep<kCentered, true, false, true>(w, g, b, n);
    case 6: return sweep<kCentered, true, true, false>(w, g, b, n);
    case 7: return sweep<kCentered, true, true, true>(w, g, b, n);
  }
}

template <bool kCentered>
static void norm_block(const kf_ctx& ctx, const T* X, const T* G, const T* B, T* Y, int M, int N,
                       float eps) {
  // Blocks share rows only when rows alone cannot keep the threads busy.
  const int P = kf_sharers(ctx, M);
  const int p = (int)ctx.block_idx.x;
  if (p >= P) return;
  // Chunks of whole vectors: block p takes [j0, j1) of each row.
  const long long per = ((N + P - 1) / P + KF_VW - 1) / KF_VW * KF_VW;
  const long long j0 = p * per < N ? p * per : N, j1 = j0 + per < N ? j0 + per : N, n = j1 - j0;
  // This block's rows: [r0, r1), an even share.
  const long long Gy = ctx.grid_dim.y, by = ctx.block_idx.y;
  const long long r0 = by * M / Gy, r1 = (by + 1) * M / Gy;
  if (r0 >= r1) return;
  auto row = [&](long long i) { return r0 <= i && i < r1 && n > 0 ? X + i * N + j0 : nullptr; };
  // Sweep t: the sum of row t + 2 (layernorm), the deviations of row t + 1, the output of row t.
  const long long lead = kCentered ? 2 : 1;
  float mean_dev = 0;  // the chunk mean of the row in the deviations part (rmsnorm: 0)
  float mu = 0, inv = 0;  // the row in the output part: its mean and 1/sigma
  for (long long t = r0 - lead; t < r1; ++t) {
    Sweep w{};
    w.xs = kCentered ? row(t + 2) : nullptr;
    w.xd = row(t + 1), w.c = mean_dev;
    w.xo = row(t), w.mu = mu, w.inv = inv, w.y = Y + (t >= 0 ? t : 0) * N + j0;
    sweep_parts<kCentered>(w, G + j0, kCentered ? B + j0 : nullptr, n);
    if (r0 <= t + 1 && t + 1 < r1) {  // row t + 1's statistics, for the next sweep's output
      float mean = mean_dev, m2 = n > 0 ? w.dev : 0.0f;
      if (P > 1) {  // combine the P partials in a fixed order, the same in every block
        const float mine[3] = {(float)n, mean, m2};
        float all[KF_SHARE][3];
        kf_exchange<3>(t + 1, p, P, mine, all);
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
      mu = mean, inv = 1.0f / std::sqrt(m2 / (float)N + eps);
    }
    if constexpr (kCentered) mean_dev = w.xs ? w.sum / (float)n : 0.0f;
  }
  kf_fence();
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
