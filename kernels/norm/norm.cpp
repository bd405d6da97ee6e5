// rmsnorm and layernorm for the cpu backend (two entries, one body), row-major (M,N), any M, N:
//   rmsnorm:   Y = X / sqrt(mean(X^2) + eps) * gamma
//   layernorm: Y = (X - mean) / sqrt(var + eps) * gamma + beta
// Each block owns a run of consecutive rows (an even share of M: at most ROWS rows, two
// blocks per thread where M allows; see kf_share_rows in the cpu prelude), one long contiguous stream per thread.
// A row is read from memory once; its later passes re-read it from L1/L2. (A software pipeline
// across rows, as in softmax.cpp, measured no faster here: these kernels have little
// arithmetic to hide.)
// layernorm is two-pass (the mean, then the sum of squared deviations from it: stable where
// E[x^2] - E[x]^2 cancels), rmsnorm one pass (a sum of squares), then the output pass.
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
//   ROWS   most rows per block
//   SPLIT  most blocks that share one row (the grid's x; at most one per thread is used)
//   NT     1: non-temporal stores of Y (where aligned), 0: plain stores
//   PF     1: prefetch the next row during a row's output pass (its DRAM reads then overlap
//          this row's writes; it also pushes x, gamma, beta out of L1), 0: leave it to the
//          hardware (the default: measured faster for layernorm)
#include <cmath>

// The vector helpers (kf_vf, kf_load, kf_store_nt, kf_exchange, ...) are the cpu prelude's.
typedef kf_vf vf;
typedef kf_storage T;

// Whole vectors of Y: streamed past the cache with NT = 1.
static inline void put_v(T* p, vf v) {
  if constexpr (NT) kf_store_nt(p, v);
  else kf_store(p, v);
}

// --- the kernel --------------------------------------------------------------------------------
#define STEP (KF_VW * ACC)

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
    for (int a = 0; a < ACC; ++a) s[a] += term(kf_load(x + j + a * KF_VW));
  for (; j + KF_VW <= n; j += KF_VW) s[0] += term(kf_load(x + j));
  if (j < n) s[0] += term(kf_load_part(x + j, (int)(n - j), c));  // padding c: adds 0 either way
  for (int a = 1; a < ACC; ++a) s[0] += s[a];
  return kf_hsum(s[0]);
}

// y = (x - mu) * inv * g (+ b) for n elements; with PF, next[0:n) is prefetched meanwhile.
template <bool kCentered>
static void chunk_write(const T* x, const T* g, const T* b, long long n, float mu, float inv, T* y,
                        const T* next) {
  long long j = 0;
  for (; j + KF_VW <= n; j += KF_VW) {
    if (PF && next) __builtin_prefetch(next + j);
    vf v = (kf_load(x + j) - mu) * inv * kf_load(g + j);
    if constexpr (kCentered) v += kf_load(b + j);
    put_v(y + j, v);
  }
  if (j < n) {
    const int r = (int)(n - j);
    vf v = (kf_load_part(x + j, r, 0) - mu) * inv * kf_load_part(g + j, r, 0);
    if constexpr (kCentered) v += kf_load_part(b + j, r, 0);
    kf_store_part(y + j, r, v);
  }
}

template <bool kCentered>
static void norm_block(const kf_ctx& ctx, const T* X, const T* G, const T* B, T* Y, int M, int N,
                       float eps) {
  // Blocks share rows only when rows alone cannot keep the threads busy (kf_share_rows).
  const kf_row_share sh = kf_share_rows(ctx, M, N, ROWS);
  if (!sh.active) return;
  const int p = sh.p, P = sh.P;
  const long long j0 = sh.j0, j1 = sh.j1, n = j1 - j0, r0 = sh.r0, r1 = sh.r1;
  for (long long i = r0; i < r1; ++i) {
    const T* x = X + i * N + j0;
    // This chunk's (count, mean, sum of squared deviations); rmsnorm: mean 0.
    float mean = 0;
    if constexpr (kCentered) mean = n > 0 ? chunk_sum<false>(x, n, 0) / (float)n : 0.0f;
    float m2 = n > 0 ? chunk_sum<true>(x, n, mean) : 0.0f;
    if (P > 1) {  // combine the P partials in a fixed order, the same in every block
      const float mine[3] = {(float)n, mean, m2};
      float all[KF_SHARE][3];
      kf_exchange<3>(i, p, P, mine, all);
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
    chunk_write<kCentered>(x, G + j0, kCentered ? B + j0 : nullptr, n, mean, inv, Y + i * N + j0,
                           i + 1 < M ? x + N : nullptr);
  }
  kf_fence();
}

static void rmsnorm_block(const kf_ctx& ctx, const T* X, const T* G, T* Y, int M, int N,
                          float eps) {
  norm_block<false>(ctx, X, G, nullptr, Y, M, N, eps);
}
static void layernorm_block(const kf_ctx& ctx, const T* X, const T* G, const T* B, T* Y, int M,
                            int N, float eps) {
  norm_block<true>(ctx, X, G, B, Y, M, N, eps);
}

KF_KERNEL(rmsnorm, rmsnorm_block)
KF_KERNEL(layernorm, layernorm_block)
