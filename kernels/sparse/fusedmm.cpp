// fusedmm for the cpu backend: out[r, :] = Σ_{p in row r} op(X[r, :] · Y[c_p, :]) · Z[c_p, :].
//
// Grid: RBLOCKS row blocks of equal work (rows whose cost prefix row_ptr[r] + r falls in the
// block's share, by binary search, as spmm.cpp). A row goes in chunks of CH nonzeros, two phases
// a chunk, the sampled values never beyond a CH-float array on the stack:
//
// - dots, 8 nonzeros at a time (kernels/common/dot8.hpp, shared with sddmm.cpu): 8
//   accumulators of one vector each, every load of X's row (from L1) feeding 8 FMAs with 8
//   neighbours' rows of Y, then the 8 vectors reduced into one vector of 8 dot products by a
//   shuffle tree (14 shuffles and 7 adds for 8 dots, where summing each dot's lanes one at a
//   time costs about 8 dependent adds per dot: at D = 32 that scalar sum cost more than the
//   dot's 4 FMAs). D % KF_VW columns are added scalar, then the op.
//   PD > 0 prefetches the rows of Y of the nonzeros PD ahead (into the block's next rows).
// - update: spmm.cpu's register tile: CW = NV * KF_VW columns of the output row in registers
//   over the chunk's nonzeros, acc += w_i * Z[c_i, j:j+CW] (PD > 0 and Z another buffer than Y:
//   the tile's lines of Z's row PD nonzeros ahead prefetched, as spmm.cpu); the tail in tiles of 4, 2, 1 vectors,
//   then one float at a time. The first chunk stores, later chunks load, add and store (the
//   output row stays in L1 across a row's chunks), so each output element sums its row's
//   nonzeros in order: deterministic. With one buffer (a graph embedding's update, `--same-yz` in
//   bench/fusedmm_vs_unfused) each neighbour's row is gathered from memory once for both uses
//   while it is in L1 (CH * 4 * D bytes: 16 KiB at CH = 32, D = 128).
// Rows with no nonzeros store zeros.
//
// 2-D tiles (KP > 0), spmm.cpu's idea for the gathers: where Y (and Z) do not fit L2 (4096 rows
// of 128 floats: 2 MiB with Z = Y, 4 MiB with two buffers, against Zen 3's 512 KiB), the block
// walks K in ranges of KR rows, KR * 4 * (D + N) bytes <= KP KiB (4D with Z = Y: one row serves
// both uses), and every row of the block does its nonzeros of the range (the same chunks, dots
// and update; the first range stores the output row, the others load, add and store), so the
// neighbours' rows come from L2 instead of L3. A row's range segment ends at its first column
// past the range (a linear scan from where the last range ended; the last range takes the rest,
// so a row whose columns do not ascend is still summed once per nonzero, in stored order). Only
// where the block uses a row of Y KMIN / 8 times or more on average: a sparser block has
// nothing to reuse (measured slower at 99%, where a 128-row block uses a row 1.3 times); and
// only where a row has KSEG nonzeros or more per range on average: each (row, range) pair costs a
// scan and a reload of the output row, which short segments do not repay.
// Neither the Z = Y detection nor the ranges change which nonzeros an element sums, nor their
// order within a range; each output element's sum is deterministic.
//
// Z = Y is seen as the same pointer (no flag in the problem: the problem's inputs stay the
// general case, and a caller who passes one buffer gets the single gather without asking).
//
// Y != Z (STAGE = 1, where the 2-D tiles do not run): the block's sampled values into
// per-thread scratch, then spmm.cpu's own row code on them (kernels/common/spmm_rows.hpp: its Z
// prefetch at distance ZPD, its 2-D tiles), so the update is the pair's spmm less the sampled
// values' trip to memory (round 8 measured the chunked update slower than that spmm; with Z = Y
// the chunked update's L1 reuse wins instead). Each element sums its row in order, as above:
// the staged and chunked paths add the same products in the same order (equal bits at the
// bench's 8 shapes).
//
// Parameters (#defines): CH nonzeros per chunk (a multiple of 8), NV vectors of the update's
// register tile, VW floats per vector (0: widest), RBLOCKS row blocks, PD the prefetch distance
// in nonzeros (0: none), KP the 2-D tiles' range of Y (and Z) in KiB (0: one pass), KMIN eight
// times the least mean uses of a row of Y in the block for the 2-D tiles, KSEG the least mean
// nonzeros of a row per range for them, STAGE 1 for the
// staged update with Y != Z (0: the chunked one), ZPD the staged update's Z prefetch distance.
#include <cmath>

#define CW (NV * KF_VW)

#include "kernels/common/equal_work_rows.hpp"  // first_row_at: equal-work row blocks
#include "kernels/common/dot8.hpp"             // dot8: 8 dot products, one shuffle-tree sum (sddmm.cpu's too)
#include "kernels/common/scratch.hpp"          // scratch(): the 2-D tiles' row cursors, per thread

// w[0:n] = op(x · Y[c_i]) for the n nonzeros at col, 8 at a time (a short last group repeats
// its first column; those sums are not kept, but with D a whole number of vectors and op 0 the
// group is stored whole: w needs room up to n rounded up to 8). n <= CH from the chunked paths
// (w: CH floats on the stack), a whole row from the staged path (w: scratch, see there).
__attribute__((always_inline)) static inline void dots(const float* x, const int* col, int n, const float* Y,
                                                       int D, const int* pcol, int pn, bool sigmoid, float* w) {
  (void)pcol, (void)pn;
  for (int g = 0; g < n; g += 8) {
    const float* y[8];
    for (int i = 0; i < 8; ++i) y[i] = Y + (long long)(int)col[g + i < n ? g + i : g] * D;
#if PD > 0
    // The neighbours PD ahead (in this chunk, or the next chunks: pcol[0:pn) runs past n).
    for (int i = 0; i < 8 && g + PD + i < pn; ++i) {
      const char* yn = (const char*)(Y + (long long)(int)pcol[g + PD + i] * D);
      for (int l = 0; l < D * 4; l += 64) __builtin_prefetch(yn + l, 0, 3);
    }
#endif
    const dot8_sums sums = dot8(x, y, D);
    const int d = D - D % KF_VW;
    if (d == D && !sigmoid) {  // no tail, no op: the 8 sums are the sampled values (w has CH >= g + 8)
      __builtin_memcpy(w + g, &sums, sizeof sums);
      continue;
    }
    float s[8];
    __builtin_memcpy(s, &sums, sizeof s);
    for (int i = 0; i < 8 && g + i < n; ++i) {
      float t = s[i];
      for (int e = d; e < D; ++e) t += x[e] * y[i][e];
      w[g + i] = sigmoid ? 1.0f / (1.0f + std::exp(-t)) : t;
    }
  }
}

// W vectors of the output row at o (columns j of zcol = Z + j) over the chunk: stores when
// `first`, else loads, adds and stores.
template <int W>
static inline void update_tile(float* o, const float* w, const int* col, int n, const float* zcol, long long N,
                               bool first, bool same) {
  (void)same;
  kf_vf acc[W];
  for (int v = 0; v < W; ++v) acc[v] = first ? kf_vf{} : kf_load(o + v * KF_VW);
  for (int i = 0; i < n; ++i) {
#if PD > 0
    // The tile's lines of Z's row PD nonzeros ahead in the chunk (with Z = Y the dot phase
    // just read them: nothing to fetch).
    if (!same && i + PD < n) {
      const char* next = (const char*)(zcol + (long long)(int)col[i + PD] * N);
      for (int l = 0; l < W * KF_VW * 4; l += 64) __builtin_prefetch(next + l, 0, 3);
    }
#endif
    const kf_vf a = kf_splat(w[i]);
    const float* z = zcol + (long long)(int)col[i] * N;
    for (int v = 0; v < W; ++v) acc[v] += a * kf_load(z + v * KF_VW);
  }
  for (int v = 0; v < W; ++v) kf_store(o + v * KF_VW, acc[v]);
}

// Inlined at each call (the chunked rows, the 2-D tiles): called out of line once it had two
// callers, it cost the chunked path 5-8% at 1024 x 32 (Z = Y, loaded host).
__attribute__((always_inline)) static inline void update(float* out, const float* w, const int* col, int n,
                                                         const float* Z, int N, bool first, bool same) {
  int j = 0;
  for (; j + CW <= N; j += CW) update_tile<NV>(out + j, w, col, n, Z + j, N, first, same);
  if (NV > 4 && j + 4 * KF_VW <= N) update_tile<4>(out + j, w, col, n, Z + j, N, first, same), j += 4 * KF_VW;
  if (NV > 2 && j + 2 * KF_VW <= N) update_tile<2>(out + j, w, col, n, Z + j, N, first, same), j += 2 * KF_VW;
  for (; j + KF_VW <= N; j += KF_VW) update_tile<1>(out + j, w, col, n, Z + j, N, first, same);
  for (; j < N; ++j) {
    float acc = first ? 0.0f : out[j];
    for (int i = 0; i < n; ++i) acc += w[i] * Z[(long long)(int)col[i] * N + j];
    out[j] = acc;
  }
}

// ---- Y != Z, staged (STAGE = 1): spmm.cpu's row code for the update ----
// spmm_rows() with its parameters: NV (the same meaning), KP and KMIN (its 2-D tiles, the same
// values as ours), UN = 1 and L2KB = 0 (spmm.cpu's defaults), and ZPD as its prefetch distance
// PD (ours prefetches Y in the dot phase; spmm.cpu's default 4 is the Z prefetch the pair has).
#if STAGE
#pragma push_macro("PD")
#undef PD
#define PD ZPD
#define UN 1
#define L2KB 0
#include "kernels/common/spmm_rows.hpp"  // spmm_rows: spmm.cpu's CSR rows, 2-D tiles and Z prefetch
#pragma pop_macro("PD")
#endif

// ---- 2-D tiles (KP > 0) ----
// Rows [r0, r1) K range by K range: range q holds the rows of Y (and Z) in [q KR, (q+1) KR),
// KR * 4 (D + N) bytes <= KP KiB (4D with Z = Y), so the block's rows gather them from L2.
// cur[i]: row r0 + i's first nonzero not yet done; the range's segment runs to the first column
// at or past the range's end (the last range takes the rest: rows whose columns do not ascend
// are still partitioned, each nonzero done once, in stored order).
static void block_ranges(const int* row_ptr, const int* col_idx, const float* X, const float* Y, const float* Z,
                         float* out, int r0, int r1, int D, int N, int KR, int nq, bool sigmoid) {
  int* cur = (int*)scratch(0, 4LL * (r1 - r0));
  for (int r = r0; r < r1; ++r) cur[r - r0] = row_ptr[r];
  float w[CH];
  for (int q = 0; q < nq; ++q) {
    const long long edge = (long long)(q + 1) * KR;
    for (int r = r0; r < r1; ++r) {
      float* o = out + (long long)r * N;
      const int p1 = row_ptr[r + 1], s0 = cur[r - r0];
      int s1 = s0;
      if (q == nq - 1) s1 = p1;
      else
        while (s1 < p1 && col_idx[s1] < edge) ++s1;
      cur[r - r0] = s1;
      if (s0 == s1) {
        if (q == 0)
          for (int j = 0; j < N; ++j) o[j] = 0.0f;
        continue;
      }
      const float* x = X + (long long)r * D;
      for (int p = s0; p < s1; p += CH) {
        const int n = s1 - p < CH ? s1 - p : CH;
        dots(x, col_idx + p, n, Y, D, col_idx + p, n, sigmoid, w);
        update(o, w, col_idx + p, n, Z, N, q == 0 && p == s0, Z == Y);
      }
    }
  }
}

static void fusedmm_block(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* X,
                          const float* Y, const float* Z, float* out, int M, int K, int D, int N, int NNZ,
                          float pattern, float op) {
  (void)NNZ, (void)pattern;
  const bool sigmoid = op == 1.0f;
  const long long nb = ctx.grid_dim.x, b = ctx.block_idx.x;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  const int pend = row_ptr[r1];  // prefetches run into the block's next rows, not past it
#if KP > 0
  {
    const long long row_bytes = 4LL * (Z == Y ? D : D + N);
    int KR = (int)((long long)KP * 1024 / (row_bytes > 0 ? row_bytes : 1));
    if (KR < 1) KR = 1;
    const int nq = K > 0 ? (K + KR - 1) / KR : 1;
    const double nnz = (double)row_ptr[r1] - row_ptr[r0], uses = nnz / (K > 0 ? K : 1);
    if (nq > 1 && 8.0 * uses >= KMIN && r1 > r0 && nnz >= (double)KSEG * nq * (r1 - r0)) {
      block_ranges(row_ptr, col_idx, X, Y, Z, out, r0, r1, D, N, KR, nq, sigmoid);
      return;
    }
  }
#endif
#if STAGE
  // Y != Z: the block's sampled values into per-thread scratch (its nonzeros' floats: 210 KiB at
  // 4096 rows 90% in 32 blocks, from L2 for the update, where the pair writes them to memory and
  // reads them back), then spmm.cpu's code on them. A row's last group of 8 may store up to 7
  // sums past its end: into the next rows' slots, which those rows then overwrite (rows go in
  // order), or into the 8 floats of slack after the block's last.
  if (Z != Y && r1 > r0) {
    const int P0 = row_ptr[r0], P = row_ptr[r1] - P0;
    float* wv = (float*)scratch(2, 4LL * (P + 8));
    for (int r = r0; r < r1; ++r) {
      const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
      if (p0 < p1) dots(X + (long long)r * D, col_idx + p0, p1 - p0, Y, D, col_idx + p0, pend - p0, sigmoid, wv + (p0 - P0));
    }
    spmm_rows(row_ptr, col_idx, wv - P0, Z, out, K, N, r0, r1, 0, N);
    return;
  }
#endif
  float w[CH];
  for (int r = r0; r < r1; ++r) {
    const float* x = X + (long long)r * D;
    float* o = out + (long long)r * N;
    const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
    if (p0 == p1) {
      for (int j = 0; j < N; ++j) o[j] = 0.0f;
      continue;
    }
    for (int q = p0; q < p1; q += CH) {
      const int n = p1 - q < CH ? p1 - q : CH;
      dots(x, col_idx + q, n, Y, D, col_idx + q, pend - q, sigmoid, w);
      update(o, w, col_idx + q, n, Z, N, q == p0, Z == Y);
    }
  }
}

KF_KERNEL(fusedmm, fusedmm_block)
