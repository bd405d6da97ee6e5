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
//   PF     1: prefetch the next row during a row's exp pass (its DRAM reads then overlap this
//          row's arithmetic), 0: leave it to the hardware
#include <cstdlib>

// The vector helpers (kf_vf, kf_load, kf_store_nt, kf_exp, kf_exchange, ...) are the cpu prelude's.
typedef kf_vf vf;
typedef kf_storage T;

// Whole vectors of Y: streamed past the cache with NT = 1.
static inline void put_v(T* p, vf v) {
  if constexpr (NT) kf_store_nt(p, v);
  else kf_store(p, v);
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

#define STEP (KF_VW * ACC)

// Max of x[0:n).
static float chunk_max(const T* x, long long n) {
  vf m[ACC];
  for (int a = 0; a < ACC; ++a) m[a] = kf_splat(-__builtin_inff());
  long long j = 0;
  for (; j + STEP <= n; j += STEP)
#pragma GCC unroll 16
    for (int a = 0; a < ACC; ++a) m[a] = kf_max(m[a], kf_load(x + j + a * KF_VW));
  for (; j + KF_VW <= n; j += KF_VW) m[0] = kf_max(m[0], kf_load(x + j));
  if (j < n) m[0] = kf_max(m[0], kf_load_part(x + j, (int)(n - j), -__builtin_inff()));
  for (int a = 1; a < ACC; ++a) m[0] = kf_max(m[0], m[a]);
  return kf_hmax(m[0]);
}

// e[j] = exp(x[j] - mx) for j < n (padded to whole vectors); returns the sum of e. With PF,
// next[0:n) is prefetched meanwhile: the next row's reads overlap this pass's arithmetic.
static float chunk_exp_sum(const T* x, long long n, float mx, float* e, const T* next) {
  vf s[ACC];
  for (int a = 0; a < ACC; ++a) s[a] = (vf){};
  long long j = 0;
  for (; j + STEP <= n; j += STEP)
#pragma GCC unroll 16
    for (int a = 0; a < ACC; ++a) {
      if (PF && next) __builtin_prefetch(next + j + a * KF_VW);
      const vf v = kf_exp(kf_load(x + j + a * KF_VW) - mx);
      *(vf*)(e + j + a * KF_VW) = v;
      s[a] += v;
    }
  for (; j < n; j += KF_VW) {
    const vf v = kf_exp((j + KF_VW <= n ? kf_load(x + j) : kf_load_part(x + j, (int)(n - j), -__builtin_inff())) - mx);
    *(vf*)(e + j) = v;
    s[0] += v;
  }
  for (int a = 1; a < ACC; ++a) s[0] += s[a];
  return kf_hsum(s[0]);
}

// y[j] = e[j] * scale for j < n.
static void chunk_write(const float* e, long long n, float scale, T* y) {
  long long j = 0;
  for (; j + KF_VW <= n; j += KF_VW) put_v(y + j, *(const vf*)(e + j) * scale);
  if (j < n) kf_store_part(y + j, (int)(n - j), *(const vf*)(e + j) * scale);
}

static void softmax_block(const kf_ctx& ctx, const T* X, T* Y, int M, int N) {
  // Blocks share rows only when rows alone cannot keep the threads busy.
  const int P = kf_sharers(ctx, M);
  const int p = (int)ctx.block_idx.x;
  if (p >= P) return;
  // Chunks of whole vectors: block p takes [j0, j1).
  const long long per = ((N + P - 1) / P + KF_VW - 1) / KF_VW * KF_VW;
  const long long j0 = p * per < N ? p * per : N, j1 = j0 + per < N ? j0 + per : N;
  float* e = scratch(per + KF_VW);
  const long long r0 = ctx.block_idx.y * (long long)ROWS;
  for (long long i = r0; i < r0 + ROWS && i < M; ++i) {
    const T* x = X + i * N + j0;
    const float mx = j1 > j0 ? chunk_max(x, j1 - j0) : -__builtin_inff();
    const float sum = j1 > j0 ? chunk_exp_sum(x, j1 - j0, mx, e, i + 1 < M ? x + N : nullptr) : 0.0f;
    float scale = 1.0f / sum;
    if (P > 1) {  // combine the P partials in a fixed order, the same in every block
      const float mine[2] = {mx, sum};
      float all[KF_SHARE][2];
      kf_exchange<2>(i, p, P, mine, all);
      float gmax = all[0][0];
      for (int q = 1; q < P; ++q) gmax = all[q][0] > gmax ? all[q][0] : gmax;
      float total = 0;
      for (int q = 0; q < P; ++q)
        if (all[q][1] > 0) total += all[q][1] * kf_exp(kf_splat(all[q][0] - gmax))[0];
      scale = j1 > j0 ? kf_exp(kf_splat(mx - gmax))[0] / total : 0.0f;
    }
    chunk_write(e, j1 - j0, scale, Y + i * N + j0);
  }
  kf_fence();
}

KF_KERNEL(softmax, softmax_block)
