// sum, max and argmax along either axis for the cpu backend, X (M,N) row-major, any M, N >= 1.
// Six entries, one body per axis: <op>_axis1 reduces each row (Y has M elements), <op>_axis0
// each column (Y has N). Values are fp32 in SIMD vectors of VW lanes with ACC independent
// accumulators. argmax gives the first maximum, as numpy's argmax: along a row by segments (the
// maximum, then its first index); down the columns each lane keeps its first maximum and index.
//
// axis 1: a block owns ROWS rows. Few long rows (M < 2 x threads): up to SPLIT blocks share a
// row (grid x), each one chunk; they exchange partials through a slot in shared memory and wait
// for each other (a row barrier), and block 0 writes the combination.
// axis 0: a block owns COLS columns and walks down the rows FOLD at a time, folding each row's
// COLS contiguous values into COLS/VW vector accumulators (in L1/L2), each row prefetched PF
// elements ahead: long contiguous runs for DRAM, one accumulator update per FOLD rows. Few column
// tiles (N/COLS < 2 x threads): up to SPLIT blocks share a tile, each a range of rows (more
// ranges than threads: they balance a loaded machine); the last to finish combines them, so no
// block waits for another.
// axis 1's row barrier: the pool hands out blocks in index order and the blocks of a row are
// adjacent (the split is the grid's x), so with at most one block per thread in a row every
// block it waits for has a thread: no deadlock.
//
// Parameters (all #defines):
//   VW     SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   ACC    independent vector accumulators (axis 1)
//   ROWS   rows per block (axis 1)
//   COLS   columns per block (axis 0; a multiple of 16): at least N keeps each block's reads
//          whole contiguous rows (4096 x 8192 sum: 0.92 of the read roof against 0.45 with
//          COLS 1024, whose 4 KB row segments are each one page: the prefetcher restarts on each)
//   FOLD   rows folded per accumulator update (axis 0; 8: the accumulator traffic an eighth of
//          the reads; 16 streams too many rows at once)
//   PF     elements ahead of the loads that each row is prefetched into L2 (axis 0; 0: none)
//   SPLIT  most blocks that share one row or column tile
//   SEG    elements per segment of argmax along a row (axis 1): each segment's maximum first,
//          then a search for its index only where it beats the row's best so far
// Each axis's spec defines only its own parameters.
#ifndef ACC
#define ACC 1
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef COLS
#define COLS 16
#endif
#ifndef FOLD
#define FOLD 8
#endif
#ifndef PF
#define PF 512
#endif
#ifndef SEG
#define SEG 2048
#endif

// The vector helpers (kf_vf, kf_load, kf_exchange, ...) are the cpu prelude's.
typedef kf_vf vf;
typedef kf_vi vi;
typedef kf_storage T;

// --- the operations: a state per lane, its update, and the combination of two states ----------
enum Op { kSum, kMax, kArgmax };
struct State {  // one lane's (or one block's) partial result
  float v;
  float at;  // argmax: the index of v (exact in fp32 below 2^24)
};
// argmax: the larger value, or on a tie the smaller index (the first maximum).
template <int O>
static inline State combine(State a, State b) {
  if constexpr (O == kSum) return {a.v + b.v, 0};
  if constexpr (O == kMax) return {b.v > a.v ? b.v : a.v, 0};
  if (b.v > a.v || (b.v == a.v && b.at < a.at)) return b;
  return a;
}
template <int O>
static inline State identity() {
  return {O == kSum ? 0.0f : -__builtin_inff(), 3.0e38f};
}

// --- axis 1: each row -----------------------------------------------------------------------
// The sum or the maximum of x[0:n), in ACC independent vector accumulators. kf_max(x, v) keeps
// v where x is NaN: the maximum skips NaNs.
template <int O>
static float row_value(const T* x, long long n) {
  const float fill = O == kSum ? 0.0f : -__builtin_inff();
  vf v[ACC];
  for (int a = 0; a < ACC; ++a) v[a] = kf_splat(fill);
  auto step = [&](int a, vf x_v) { v[a] = O == kSum ? v[a] + x_v : kf_max(x_v, v[a]); };
  long long j = 0;
  for (; j + KF_VW * ACC <= n; j += KF_VW * ACC)
#pragma GCC unroll 16
    for (int a = 0; a < ACC; ++a) step(a, kf_load(x + j + a * KF_VW));
  for (; j + KF_VW <= n; j += KF_VW) step(0, kf_load(x + j));
  if (j < n) step(0, kf_load_part(x + j, (int)(n - j), fill));
  for (int a = 1; a < ACC; ++a) step(0, v[a]);
  return O == kSum ? kf_hsum(v[0]) : kf_hmax(v[0]);
}

// The first maximum of x[0:n) and its index (offset by j0), SEG elements at a time: a
// segment's maximum costs what max costs (one vmaxps a vector), and only a segment whose
// maximum beats the best so far is searched again, from L1, for the first element equal to it.
// Along a random row new maxima grow rare (about ln(segments) of them), so argmax costs about
// what max does, where keeping an index per lane cost a compare and two blends a vector more; a
// rising row searches every segment (twice max's work). Later equal maxima do not beat the
// first; NaNs are skipped.
static State argmax_chunk(const T* x, long long n, long long j0) {
  State best = {-__builtin_inff(), (float)j0};
  for (long long s0 = 0; s0 < n; s0 += SEG) {
    const T* seg = x + s0;
    const long long len = n - s0 < SEG ? n - s0 : SEG;
    const float m = row_value<kMax>(seg, len);
    if (!(m > best.v)) continue;
    const vf mv = kf_splat(m);
    long long j = 0;
    while (j + KF_VW <= len && !kf_any(kf_load(seg + j) == mv)) j += KF_VW;
    while (kf_to_f32(seg[j]) != m) ++j;  // within that vector, or in the segment's tail
    best = {m, (float)(j0 + s0 + j)};
  }
  return best;
}

template <int O>
static State row_chunk(const T* x, long long n, long long j0) {
  if constexpr (O == kArgmax) return argmax_chunk(x, n, j0);
  else return {row_value<O>(x, n), 0};
}

template <int O>
static void axis1_block(const kf_ctx& ctx, const T* X, T* Y, int M, int N) {
  const int P = kf_sharers(ctx, M), p = (int)ctx.block_idx.x;
  if (p >= P) return;
  const long long per = ((N + P - 1) / P + KF_VW - 1) / KF_VW * KF_VW;
  const long long j0 = p * per < N ? p * per : N, j1 = j0 + per < N ? j0 + per : N;
  const long long r0 = ctx.block_idx.y * (long long)ROWS;
  for (long long i = r0; i < r0 + ROWS && i < M; ++i) {
    State s = j1 > j0 ? row_chunk<O>(X + i * N + j0, j1 - j0, j0) : identity<O>();
    if (P > 1) {
      float all[KF_SHARE][2];
      const float mine[2] = {s.v, s.at};
      kf_exchange<2>(i, p, P, mine, all);
      if (p != 0) continue;
      s = identity<O>();
      for (int q = 0; q < P; ++q) s = combine<O>(s, {all[q][0], all[q][1]});
    }
    Y[i] = kf_from_f32(O == kArgmax ? s.at : s.v);
  }
}

// --- axis 0: each column --------------------------------------------------------------------
#define CV (COLS / KF_VW + 1)  // accumulator vectors per column tile (+1: a partial one)

// Folds rows [i, i + R) of the tile's vector c (each at x + r * N) into (v, at). Sum and max
// load the R rows first and combine them as a tree (independent adds, one accumulator update
// per R rows); argmax takes them in order with a strict compare, so each lane keeps the first
// maximum down its column.
template <int O, int R, class Load>
static inline void fold_rows(vf& v, vi& at, long long i, long long N, Load load) {
  if constexpr (O == kArgmax) {
    for (int r = 0; r < R; ++r) {
      const vf x_v = load(r * N);
      const vi better = x_v > v;
      v = better ? x_v : v;
      at = better ? kf_vi{} + (int)(i + r) : at;
    }
  } else {
    vf x[R];
    for (int r = 0; r < R; ++r) x[r] = load(r * N);
    for (int step = 1; step < R; step *= 2)
      for (int r = 0; r + step < R; r += 2 * step) x[r] = O == kSum ? x[r] + x[r + step] : kf_max(x[r], x[r + step]);
    v = O == kSum ? v + x[0] : kf_max(v, x[0]);
  }
}

// Rows [i0, i1) of the column tile [c0, c0 + w) into (v, at), R rows at a time: R streams of
// contiguous values, each prefetched PF elements ahead into L2, near the tile's end the start
// of the next R rows (so a tile narrower than a row does not start each block cold). The
// accumulators and the current lines stay in L1; prefetching the next R rows a whole tile
// width ahead instead (the old walk) ran at 0.65-0.87 of a row sum: those lines waited too long.
template <int O, int R>
static void fold_tile(const T* X, long long N, long long c0, long long w, long long i0, long long i1,
                      vf* v, vi* at) {
  const long long full = w / KF_VW, tail = w % KF_VW;
  const float fill = O == kSum ? 0.0f : -__builtin_inff();
  long long i = i0;
  for (; i + R <= i1; i += R) {
    const T* x = X + i * N + c0;
    for (long long c = 0; c < full; ++c) {
      const T* xc = x + c * KF_VW;
      // Past the tile's end each stream goes on in the next R rows, where the range has them
      // (and one row more: PF may run past the tile's last column into the following row), so
      // no address is formed beyond the tensor.
      const bool within = c * KF_VW + PF < w;
      if (PF > 0 && (within || i + 2 * R < i1)) {
        const T* pf = within ? xc + PF : xc + PF - w + R * N;
        for (int r = 0; r < R; ++r) __builtin_prefetch(pf + r * N, 0, 2);
      }
      fold_rows<O, R>(v[c], at[c], i, N, [&](long long o) { return kf_load(xc + o); });
    }
    if (tail) {
      const T* xc = x + full * KF_VW;
      fold_rows<O, R>(v[full], at[full], i, N, [&](long long o) { return kf_load_part(xc + o, (int)tail, fill); });
    }
  }
  for (; i < i1; ++i) fold_tile<O, 1>(X, N, c0, w, i, i + 1, v, at);
}

// The blocks sharing a column tile (the grid's x) each take an even range of its rows. Where the
// rows allow there are more of them than threads, taken as threads come free, so a thread the
// machine runs late does not hold the others up (one range per thread, joined at a barrier,
// ran 2048 x 8192 at 0.67 of a row sum on the loaded machine). Each block publishes its
// accumulators in the tile's slot and the last to finish combines them in row order: no block
// waits for another, and the result does not depend on which thread ran which range.
constexpr int kSlots = 256, kRanges = 16;  // tiles shared at once (beyond: none), ranges per tile
static vf* tile_slot(long long t) {  // kRanges x (CV value vectors, CV index vectors)
  static vf* slot[kSlots];
  vf* s = __atomic_load_n(&slot[t], __ATOMIC_ACQUIRE);
  if (s) return s;
  vf* fresh = new vf[kRanges * 2 * CV];
  if (__atomic_compare_exchange_n(&slot[t], &s, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return fresh;
  delete[] fresh;  // another block of the tile was first
  return s;
}

template <int O>
static void axis0_block(const kf_ctx& ctx, const T* X, T* Y, int M, int N) {
  const long long tiles = ctx.grid_dim.y, t = ctx.block_idx.y;
  const bool share = tiles < 2 * ctx.workers && tiles <= kSlots;
  const int P = !share ? 1 : ctx.grid_dim.x < kRanges ? (int)ctx.grid_dim.x : kRanges, p = (int)ctx.block_idx.x;
  if (p >= P) return;
  const long long c0 = t * COLS, w = c0 + COLS < N ? COLS : N - c0, nv = (w + KF_VW - 1) / KF_VW;
  const long long per = (M + P - 1) / P;
  const long long i0 = p * per < M ? p * per : M, i1 = i0 + per < M ? i0 + per : M;
  vf v[CV];
  vi at[CV];
  for (int c = 0; c < CV; ++c) v[c] = kf_splat(O == kSum ? 0.0f : -__builtin_inff()), at[c] = kf_vi{};
  fold_tile<O, FOLD>(X, N, c0, w, i0, i1, v, at);
  if (P > 1) {
    static int finished[kSlots];
    vf* slot = tile_slot(t);
    for (long long c = 0; c < nv; ++c) slot[(2 * p) * CV + c] = v[c], slot[(2 * p + 1) * CV + c] = (vf)at[c];
    if (__atomic_add_fetch(&finished[t], 1, __ATOMIC_ACQ_REL) != P) return;
    __atomic_store_n(&finished[t], 0, __ATOMIC_RELAXED);  // for the next launch (after this one)
    for (long long c = 0; c < nv; ++c) {  // ranges in row order: argmax keeps the first maximum
      v[c] = slot[c], at[c] = (vi)slot[CV + c];
      for (int q = 1; q < P; ++q) {
        const vf x_v = slot[2 * q * CV + c];
        if constexpr (O == kSum) v[c] += x_v;
        if constexpr (O == kMax) v[c] = kf_max(v[c], x_v);
        if constexpr (O == kArgmax) {
          const vi better = x_v > v[c];
          v[c] = better ? x_v : v[c];
          at[c] = better ? (vi)slot[(2 * q + 1) * CV + c] : at[c];
        }
      }
    }
  }
  // Y in whole vectors (lane by lane, 8192 results took longer than folding 8 rows of them).
  for (long long c = 0; c < nv; ++c) {
    const vf y = O == kArgmax ? __builtin_convertvector(at[c], vf) : v[c];
    const long long left = w - c * KF_VW;
    if (left >= KF_VW) kf_store(Y + c0 + c * KF_VW, y);
    else kf_store_part(Y + c0 + c * KF_VW, (int)left, y);
  }
}

#define KF_REDUCE(op, O)                                                                    \
  static void op##_axis1_block(const kf_ctx& c, const T* X, T* Y, int M, int N) {           \
    axis1_block<O>(c, X, Y, M, N);                                                         \
  }                                                                                        \
  static void op##_axis0_block(const kf_ctx& c, const T* X, T* Y, int M, int N) {           \
    axis0_block<O>(c, X, Y, M, N);                                                         \
  }                                                                                        \
  KF_KERNEL(op##_axis1, op##_axis1_block)                                                  \
  KF_KERNEL(op##_axis0, op##_axis0_block)

KF_REDUCE(sum, kSum)
KF_REDUCE(max, kMax)
KF_REDUCE(argmax, kArgmax)
