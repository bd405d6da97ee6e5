// moe_grouped_gemm for the cpu backend: dispatch, grouped GEMM and combine in ONE launch.
//
// Each block owns the output elements Y[token block, strip of columns] (grid: column strips x
// TBLOCKS token blocks), so the combine is race-free without atomics. Every token carries
// exactly K (token, slot) pairs, so equal blocks are equal work however skewed the routing is.
// By default the blocks are column strips over all tokens, as many as the pool has threads (or
// a multiple): W is then read from memory once in all (it is the operand that does not fit in
// cache: 128 MB at E=64), and X, which fits in the last-level cache, once per strip.
//
// The block builds its schedule from the routing (a counting sort of its (token, slot) pairs
// by expert: offsets[e] .. offsets[e+1] are expert e's rows, in token order), then walks steps
// (expert e, KC slice of H), BLIS-style, as gemm does:
//   pack B    W[e][slice, strip] into NR-wide panels, once for all of e's rows (kept in L2),
//             while the next step's W slice is prefetched a line at a time during the tiles
//   pack A    per group of MC of e's rows: the tokens' rows of X (the dispatch: a gather),
//             into MR-tall panels (L2; one panel in L1 per tile)
//   GEMM      MR x NR register micro-kernel per (row tile, column panel); a group's tail tile
//             has exactly the rows left (an expert with 3 rows costs 3 rows, not MR)
//   combine   Y[token, :] += gate * tile after every slice, in expert order, so the result is
//             deterministic (the gated slices sum to the gated product: no partial sums kept)
// Experts with no token cost nothing; no padding to a capacity, no per-expert launch.
//
// Parameters (all #defines):
//   MR      rows per micro-tile              NV  SIMD vectors per micro-tile row (NR = NV*VW)
//   VW      SIMD width in floats (0: widest) MC  rows of an expert per group
//   KC      reduction slice                  BN  columns of Y per strip (about: whole panels)
//   TBLOCKS token blocks (blocks: the grid's strips x min(T, TBLOCKS))
#include <cstdlib>
#include <cstring>

#include "kernels/common/simd.hpp"        // VW, T, vf, scratch()
#include "kernels/common/transpose8.hpp"  // transpose8, kf_v8: the A gather
// Scratch slots: 0 B panels, 1 A panels, 2 the schedule.

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

// The rows of an expert's group (tokens pair[i] / K), slice k0 .. k0+kc of X -> panels of MR
// rows, Ap[panel][k][MR] (zero beyond mc): the micro-kernel then reads A as one contiguous
// stream, as gemm's does. Reading X in place instead (MR broadcasts from MR rows a whole X row
// apart) ran 0.81-0.87x this with 6x2 tiles (one thread, loaded host); the copy is amortized
// over the strip's NR panels. The copy is gemm's (kernels/common/packed_tile.hpp) with a row
// pointer per token: 8 rows x 8 k per transpose8() and 8 contiguous stores, where the scalar
// copy did one scattered 4-byte store per element; the k tail (kc not a multiple of 8) stays
// scalar. The next panel's rows are prefetched while this one is copied.
static void pack_a(const float* X, int H, int K, const int* pair, int mc, int k0, int kc, float* Ap) {
  for (int i0 = 0; i0 < mc; i0 += MR) {
    float* dst = Ap + (long long)i0 * kc;
    const int h = mc - i0 < MR ? mc - i0 : MR;
    const int h_next = mc - i0 - MR < MR ? mc - i0 - MR : MR;  // rows of the next panel (<= 0: none)
    const float* src[MR];
    const float* nxt[MR];
    for (int i = 0; i < h; ++i) src[i] = X + (long long)(pair[i0 + i] / K) * H + k0;
    for (int i = 0; i < h_next; ++i) nxt[i] = X + (long long)(pair[i0 + MR + i] / K) * H + k0;
    int k = 0;
    for (; k + 8 <= kc; k += 8) {
      if ((k & 15) == 0)
        for (int i = 0; i < h_next; ++i) __builtin_prefetch(nxt[i] + k);
#pragma GCC unroll 2
      for (int g = 0; g < MR; g += 8) {  // rows g .. g+7 of the panel (MR up to 16)
        kf_v8 r[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) r[i] = g + i < h ? *(const kf_v8_unaligned*)(src[g + i] + k) : kf_v8{};
        transpose8(r);
        const int w = MR - g < 8 ? MR - g : 8;
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) __builtin_memcpy(dst + (k + j) * MR + g, &r[j], w * sizeof(float));
      }
    }
    if (k < kc)  // the k tail's line of the next panel's rows
      for (int i = 0; i < h_next; ++i) __builtin_prefetch(nxt[i] + k);
    for (int i = 0; i < h; ++i)
      for (int kk = k; kk < kc; ++kk) dst[kk * MR + i] = src[i][kk];
    for (int i = h; i < MR; ++i)
      for (int kk = k; kk < kc; ++kk) dst[kk * MR + i] = 0.0f;
  }
}

// Where a tile's results go: Y[pair[i] / K, 0:cols] += gate[pair[i]] * acc (y points at the
// block's column panel). Every KC slice adds its gated partial sum to Y directly (the sum is
// linear in the slices), so an expert's B slice is packed once for all its rows and no partial
// sums are parked.
struct Out {
  float* y;
  const int* pair;
  const float* gate;
  int K, F, cols;
};

// KF_ABLATE (not a spec parameter; 0, the default, compiles all of this away): phases taken out
// to measure what each costs (bench/kernel_phases, issue 25). The results are then wrong on
// purpose. Bits:
//   1  no W packing: a thread packs a W slice the first time (at these sizes) and never again
//   2  no A gather: the same for the X rows' A panels (its first group's stand in for all)
//   4  no Y combine: tiles are added (same instructions) to a per-thread scratch tile in L1
//      instead of Y's rows, and Y is not prefetched
//   8  no W prefetch (the next slice's lines, spread over the tiles)
//  16  L1 panels: every tile multiplies A's panel 0 by B's panel 0 (L1-resident)
#ifndef KF_ABLATE
#define KF_ABLATE 0
#endif

// One M x NR tile (M <= MR rows of the packed A panel ap, the B panel b) over a kc-long slice,
// added, gated, to Y.
template <int M>
static void tile(int kc, const float* __restrict ap, const float* __restrict b, const Out& o, Prefetch& pf,
                 int lines) {
#if !(KF_ABLATE & 4)
  for (int i = 0; i < M; ++i)  // the rows of Y this tile adds to, fetched while it computes
    for (int j = 0; j < NR; j += 16) __builtin_prefetch(o.y + (long long)(o.pair[i] / o.K) * o.F + j, 1, 3);
#endif
  vf c[M][NV];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) c[i][v] = vf{};
  // The W lines, spread evenly over the tile (bursts would fill the miss queues and stall it).
  const int per_block = (lines * 16 + kc - 1) / kc;
  int issued = 0;
  for (int kb = 0; kb < kc; kb += 16) {
    for (int q = 0; q < per_block && issued < lines; ++q, ++issued) pf.next();
    const int ke = kc - kb < 16 ? kc : kb + 16;
#pragma GCC unroll 4
    for (int k = kb; k < ke; ++k) {
      vf bv[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) bv[v] = *(const vf*)(b + k * NR + v * VW);
#pragma GCC unroll 16
      for (int i = 0; i < M; ++i) {
        const float ai = ap[k * MR + i];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) c[i][v] += ai * bv[v];
      }
    }
  }
  for (; issued < lines; ++issued) pf.next();
  for (int i = 0; i < M; ++i) {  // combine: this block owns these Y elements
    const int pr = o.pair[i];
    const float g = o.gate[pr];
#if KF_ABLATE & 4
    float* y = (float*)scratch(3, MR * NR * sizeof(float)) + i * NR;
#else
    float* y = o.y + (long long)(pr / o.K) * o.F;
#endif
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
static void tile_rows(int rows, int kc, const float* ap, const float* b, const Out& o, Prefetch& pf, int lines) {
  if (rows == M) return tile<M>(kc, ap, b, o, pf, lines);
  if constexpr (M > 1) tile_rows<M - 1>(rows, kc, ap, b, o, pf, lines);
}

// A step of the block's work: expert e, reduction slice k0 .. k0+KC (all of e's rows, in
// groups of MC).
struct Step {
  int e, k0;
};

// The step after s (experts ascending, then slices); e == E when there is none.
static Step next_step(Step s, const int* offsets, int E, int H) {
  if (s.k0 + KC < H) return {s.e, s.k0 + KC};
  int e = s.e + 1;
  while (e < E && offsets[e] == offsets[e + 1]) ++e;
  return {e, 0};
}

static void moe_block(const kf_ctx& ctx, const float* X, const float* ids, const float* gate,
                      const float* W, float* Y, int T, int H, int F, int E, int K) {
  // S strips of whole panels. The spec's grid (at least ceil(F/BN) blocks across, more where F
  // allows: an upper bound, as gemm's rows) lets S follow the pool: ceil(F/BN) strips rounded
  // down to a multiple of the threads, so that every thread gets as many (3 strips of 192, 192
  // and 128 columns left one of 2 threads 320 columns and the other 192: at best 0.8 of the
  // pair's peak), or one strip per thread where F/BN gives fewer strips than threads (F = 256
  // on 2 threads). Strip x holds panels [ceil(P*x/S), ceil(P*(x+1)/S)) of the P = ceil(F/NR):
  // strips differ by one panel at most, larger ones first.
  const long long G = ctx.grid_dim.x, x = ctx.block_idx.x, w = ctx.workers > 0 ? ctx.workers : 1;
  const long long P = (F + NR - 1) / NR, want = (F + BN - 1) / BN;
  long long S = want >= w ? want / w * w : w;
  S = S < G ? S : G;
  S = S < P ? S : P;
  if (x >= S) return;  // a block beyond the strips owns no columns
  const int n0 = (int)((P * x + S - 1) / S) * NR, n1 = (int)((P * (x + 1) + S - 1) / S) * NR;
  const int nc = (n1 < F ? n1 : F) - n0;
  const long long nb = ctx.grid_dim.y, b = ctx.block_idx.y;
  const int t0 = (int)(T * b / nb), tc = (int)(T * (b + 1) / nb) - t0;
  for (int t = 0; t < tc; ++t) std::memset(Y + (long long)(t0 + t) * F + n0, 0, nc * sizeof(float));
  if (tc == 0 || nc <= 0) return;

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
  float* Ap = (float*)scratch(1, (long long)((MC + MR - 1) / MR * MR) * kc_max * sizeof(float));
  for (Step s = next_step({-1, H}, offsets, E, H); s.e < E;) {
    const Step nx = next_step(s, offsets, E, H);
    const int rows = offsets[s.e + 1] - offsets[s.e];
    const int kc = H - s.k0 < KC ? H - s.k0 : KC;
#if KF_ABLATE & 3
    // This thread's panels hold real values once it has packed them at these addresses and sizes.
    static thread_local const float *packed_b = nullptr, *packed_a = nullptr;
    static thread_local long long packed_n = 0;
    const long long packed_now = (long long)kc << 32 | nc;
    const bool first = Bp != packed_b || Ap != packed_a || packed_now != packed_n;
    packed_b = Bp, packed_a = Ap, packed_n = packed_now;
#endif
#if KF_ABLATE & 1
    if (first)
#endif
      pack_b(W + (long long)s.e * H * F, F, s.k0, kc, n0, nc, Bp);
    const int nx_kc = nx.e < E ? (H - nx.k0 < KC ? H - nx.k0 : KC) : 0;
    Prefetch pf{(const char*)(nx.e < E ? W + ((long long)nx.e * H + nx.k0) * F + n0 : W), (long long)F * 4,
                nc * 4 + 63, 0, nx_kc};
#if KF_ABLATE & 8
    pf.rows = 0;
#endif
    int lines = nx_kc * ((nc * 4 + 63) / 64 + 1), tiles = (rows + MR - 1) / MR * (ldc / NR);
    for (int g0 = 0; g0 < rows; g0 += MC) {
      const int mc = rows - g0 < MC ? rows - g0 : MC;
      const int* grp = pair + offsets[s.e] + g0;
#if KF_ABLATE & 2
      if (first && g0 == 0)
#endif
        pack_a(X, H, K, grp, mc, s.k0, kc, Ap);
      for (int j0 = 0; j0 < nc; j0 += NR) {
        const int cols = nc - j0 < NR ? nc - j0 : NR;
        for (int i0 = 0; i0 < mc; i0 += MR, --tiles) {
          const int share = (lines + tiles - 1) / tiles;
          lines -= share;
          const Out o{Y + n0 + j0, grp + i0, gate, K, F, cols};
#if KF_ABLATE & 16
          tile_rows<MR>(mc - i0 < MR ? mc - i0 : MR, kc, Ap, Bp, o, pf, share);
#else
          tile_rows<MR>(mc - i0 < MR ? mc - i0 : MR, kc, Ap + (long long)i0 * kc, Bp + (long long)j0 * kc, o, pf,
                        share);
#endif
        }
      }
    }
    s = nx;
  }
}

KF_KERNEL(moe_grouped_gemm, moe_block)
