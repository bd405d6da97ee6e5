// moe_grouped_gemm for the cpu backend: dispatch, grouped GEMM and combine in ONE launch.
//
// Each block owns the output elements Y[token block, n0:n0+BN] (grid: column strips of BN x
// TBLOCKS token blocks), so the combine is race-free without atomics. Every token carries
// exactly K (token, slot) pairs, so equal blocks are equal work however skewed the routing is.
// By default the blocks are column strips over all tokens: W is then read from memory once in
// all (it is the operand that does not fit in cache: 128 MB at E=64), and X, which fits in the
// last-level cache, is read once per strip.
//
// The block builds its schedule from the routing (a counting sort of its (token, slot) pairs
// by expert: offsets[e] .. offsets[e+1] are expert e's rows, in token order), then walks steps
// (expert e, group of MC of its rows, KC slice of H), BLIS-style:
//   pack      W[e][slice, strip] into NR-wide panels (B, kept in L2 and L1), while the next
//             step's W slice is prefetched a line at a time during this step's tiles
//   dispatch  none as a pass: each tile reads its MR tokens' rows of X in place (the next
//             tile's rows are prefetched), so X is never copied
//   GEMM      MR x NR register micro-kernel per (row tile, column panel); a group's tail tile
//             has exactly the rows left (an expert with 3 rows costs 3 rows, not MR)
//   combine   after the last slice Y[token, :] += gate * tile, in expert order, so the result
//             is deterministic; earlier slices park partial sums in a per-thread C
// Experts with no token cost nothing; no padding to a capacity, no per-expert launch.
//
// Parameters (all #defines):
//   MR      rows per micro-tile              NV  SIMD vectors per micro-tile row (NR = NV*VW)
//   VW      SIMD width in floats (0: widest) MC  rows of an expert per group
//   KC      reduction slice                  BN  columns of Y per block
//   TBLOCKS token blocks (blocks = ceil(F/BN) * min(T, TBLOCKS))
#include <cstdlib>
#include <cstring>

#include "kernels/common/simd.hpp"  // VW, T, vf, scratch()
// Scratch slots: 0 B panels, 1 C partial sums, 2 the schedule.

#define NR (NV * VW)

// W[k0:k0+kc, n0:n0+nc] (row stride F) -> panels of NR columns, Bp[panel][k][NR], zero beyond
// nc. W is read row by row (nc contiguous floats each), a stream the hardware prefetcher follows.
static void pack_b(const float* We, int F, int k0, int kc, int n0, int nc, float* Bp) {
  const int full = nc / NR, rest = nc - full * NR;
  for (int k = 0; k < kc; ++k) {
    const float* src = We + (long long)(k0 + k) * F + n0;
    for (int p = 0; p < full; ++p) {
      float* d = Bp + ((long long)p * kc + k) * NR;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) *(vf*)(d + v * VW) = *(const vf_unaligned*)(src + p * NR + v * VW);
    }
    if (rest) {
      float* d = Bp + ((long long)full * kc + k) * NR;
      for (int j = 0; j < rest; ++j) d[j] = src[full * NR + j];
      for (int j = rest; j < NR; ++j) d[j] = 0.0f;
    }
  }
}

// The next W slice to pack, fetched into L2 a line at a time while the tiles of this slice
// compute, so packing it never waits for DRAM (W is the one operand that does not fit in cache).
struct Prefetch {
  const char* row;
  long long stride;
  int bytes, col, rows;
  inline void next() {
    if (rows <= 0) return;
    __builtin_prefetch(row + col, 0, 2);
    if ((col += 64) >= bytes) col = 0, row += stride, --rows;
  }
};

// Where a tile's results go. Partial slices: C[i][0:NR] (row stride ldc) = acc. Last slice:
// Y[pair[i] / K, 0:cols] += gate[pair[i]] * acc (y points at the block's column panel).
struct Out {
  float* C;
  int ldc;
  float* y;
  const int* pair;
  const float* gate;
  int K, F, cols;
  const int* next_pair;  // the next tile's rows, fetched into L1 while this one computes
  int next_rows;
};

// One M x NR tile (M <= MR tokens' rows of X, read in place; the B panel b) over the slice
// k0 .. k0+kc, starting from zero (first slice) or from the parked partial sums, ending in C or,
// after the last slice, in Y.
template <int M>
static void tile(const float* X, int H, int k0, int kc, const float* __restrict b, bool first, bool last,
                 const Out& o, Prefetch& pf, int lines) {
  const float* a[M];  // dispatch: the tile reads its tokens' rows of X in place
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) a[i] = X + (long long)(o.pair[i] / o.K) * H + k0;
  if (last)  // the rows of Y this tile adds to, fetched while it computes
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < NR; j += 16) __builtin_prefetch(o.y + (long long)(o.pair[i] / o.K) * o.F + j, 1, 3);
  const float* next[MR];
  for (int r = 0; r < o.next_rows; ++r) next[r] = X + (long long)(o.next_pair[r] / o.K) * H + k0;
  vf c[M][NV];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) c[i][v] = first ? vf{} : *(const vf*)(o.C + (long long)i * o.ldc + v * VW);
  // The W lines, spread evenly over the tile (bursts would fill the miss queues and stall it).
  const int per_block = (lines * 16 + kc - 1) / kc;
  int issued = 0;
  for (int kb = 0; kb < kc; kb += 16) {  // 16 k steps: one cache line of each row of A
    for (int r = 0; r < o.next_rows; ++r) __builtin_prefetch(next[r] + kb, 0, 3);
    for (int q = 0; q < per_block && issued < lines; ++q, ++issued) pf.next();
    const int ke = kc - kb < 16 ? kc : kb + 16;
#pragma GCC unroll 2
    for (int k = kb; k < ke; ++k) {
      vf bv[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) bv[v] = *(const vf*)(b + k * NR + v * VW);
#pragma GCC unroll 16
      for (int i = 0; i < M; ++i) {
        const float ai = a[i][k];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) c[i][v] += ai * bv[v];
      }
    }
  }
  for (; issued < lines; ++issued) pf.next();
  if (!last) {
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) *(vf*)(o.C + (long long)i * o.ldc + v * VW) = c[i][v];
    return;
  }
  for (int i = 0; i < M; ++i) {  // combine: this block owns these Y elements
    const int pr = o.pair[i];
    const float g = o.gate[pr];
    float* y = o.y + (long long)(pr / o.K) * o.F;
    if (o.cols == NR) {
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) *(vf_unaligned*)(y + v * VW) += g * c[i][v];
    } else {
      const float* row = (const float*)&c[i][0];
      for (int j = 0; j < o.cols; ++j) y[j] += g * row[j];
    }
  }
}

// tile<rows>() for rows in [1, M]: the compiler sees every tile height as a constant.
template <int M>
static void tile_rows(int rows, const float* X, int H, int k0, int kc, const float* b, bool first, bool last,
                      const Out& o, Prefetch& pf, int lines) {
  if (rows == M) return tile<M>(X, H, k0, kc, b, first, last, o, pf, lines);
  if constexpr (M > 1) tile_rows<M - 1>(rows, X, H, k0, kc, b, first, last, o, pf, lines);
}

// A step of the block's work: expert e's rows g0 .. g0+MC, reduction slice k0 .. k0+KC.
struct Step {
  int e, g0, k0;
};

// The step after s (experts ascending, then groups, then slices); e == E when there is none.
static Step next_step(Step s, const int* offsets, int E, int H) {
  if (s.k0 + KC < H) return {s.e, s.g0, s.k0 + KC};
  if (s.g0 + MC < offsets[s.e + 1]) return {s.e, s.g0 + MC, 0};
  int e = s.e + 1;
  while (e < E && offsets[e] == offsets[e + 1]) ++e;
  return {e, e < E ? offsets[e] : 0, 0};
}

static void moe_block(const kf_ctx& ctx, const float* X, const float* ids, const float* gate,
                      const float* W, float* Y, int T, int H, int F, int E, int K) {
  const int n0 = (int)ctx.block_idx.x * BN, nc = F - n0 < BN ? F - n0 : BN;
  const long long nb = ctx.grid_dim.y, b = ctx.block_idx.y;
  const int t0 = (int)(T * b / nb), tc = (int)(T * (b + 1) / nb) - t0;
  for (int t = 0; t < tc; ++t) std::memset(Y + (long long)(t0 + t) * F + n0, 0, nc * sizeof(float));
  if (tc == 0) return;

  // Schedule: a counting sort of the block's (token, slot) pairs by expert. offsets[e] is the
  // first row of expert e; row r is the pair token*K + slot, pair[r].
  int* offsets = (int*)scratch(2, (long long)(2 * E + 1 + tc * K) * sizeof(int));
  int* cursor = offsets + E + 1;
  int* pair = cursor + E;
  std::memset(offsets, 0, (E + 1) * sizeof(int));
  for (int i = t0 * K; i < (t0 + tc) * K; ++i) {
    const int e = (int)ids[i];
    if (e >= 0 && e < E) ++offsets[e + 1];  // invalid ids route nowhere (inputs guarantee none)
  }
  for (int e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
  for (int e = 0; e < E; ++e) cursor[e] = offsets[e];
  for (int i = t0 * K; i < (t0 + tc) * K; ++i) {
    const int e = (int)ids[i];
    if (e >= 0 && e < E) pair[cursor[e]++] = i;
  }

  const int kc_max = H < KC ? H : KC, ldc = (nc + NR - 1) / NR * NR;
  float* Bp = (float*)scratch(0, (long long)kc_max * ldc * sizeof(float));
  float* C = H > KC ? (float*)scratch(1, (long long)MC * ldc * sizeof(float)) : nullptr;
  const int panels = ldc / NR;
  for (Step s = next_step({-1, 0, H}, offsets, E, H); s.e < E;) {
    const Step nx = next_step(s, offsets, E, H);
    const int mc = offsets[s.e + 1] - s.g0 < MC ? offsets[s.e + 1] - s.g0 : MC;
    const int kc = H - s.k0 < KC ? H - s.k0 : KC;
    const int* grp = pair + s.g0;
    pack_b(W + (long long)s.e * H * F, F, s.k0, kc, n0, nc, Bp);
    const int nx_kc = nx.e < E ? (H - nx.k0 < KC ? H - nx.k0 : KC) : 0;
    Prefetch pf{(const char*)(nx.e < E ? W + ((long long)nx.e * H + nx.k0) * F + n0 : W), (long long)F * 4,
                nc * 4 + 63, 0, nx_kc};
    int lines = nx_kc * ((nc * 4 + 63) / 64 + 1), tiles = (mc + MR - 1) / MR * panels;
    for (int j0 = 0; j0 < nc; j0 += NR) {
      const int cols = nc - j0 < NR ? nc - j0 : NR;
      for (int i0 = 0; i0 < mc; i0 += MR, --tiles) {
        const int share = (lines + tiles - 1) / tiles;
        lines -= share;
        const int next_rows = mc - i0 - MR < MR ? mc - i0 - MR : MR;  // <= 0: no next tile here
        const Out o{C ? C + (long long)i0 * ldc + j0 : nullptr, ldc, Y + n0 + j0, grp + i0, gate, K, F, cols,
                    grp + i0 + MR, next_rows};
        tile_rows<MR>(mc - i0 < MR ? mc - i0 : MR, X, H, s.k0, kc, Bp + (long long)j0 * kc,
                      s.k0 == 0, s.k0 + kc >= H, o, pf, share);
      }
    }
    s = nx;
  }
}

KF_KERNEL(moe_grouped_gemm, moe_block)
