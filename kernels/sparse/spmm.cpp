// spmm for the cpu backend: C = A * B with A in CSR, vectorized over B's and C's columns.
//
// Grid: (ceil(N / BN) column strips) x (RBLOCKS row blocks). Row blocks get equal WORK, not
// equal rows: block b takes the rows whose cost prefix, row_ptr[r] + r (a row costs its
// nonzeros plus one for writing its output row), falls in [b, b+1) * total / RBLOCKS, found by
// binary search on row_ptr. So a power-law matrix's long rows share no block with many others
// and a dense row is one block's whole work, with no sort and no scratch (the pool hands blocks
// to threads as they free up, which balances what equal cost leaves uneven).
//
// Inside a block, the strip is walked in column panels sized for L2, with the row loop inside a
// panel: every nonzero gathers one B row's panel, and a row of A at 70% sparsity touches 30% of
// B, so a panel of B that stays in L2 (K * panel * 4 bytes <= L2KB KiB) serves the block's rows
// from L2 instead of L3. The panel is a multiple of the register tile, at least one tile.
//
// Each row's panel is accumulated in CW = NV * VW columns of registers per pass over the row's
// nonzeros: acc += values[p] * B[col_idx[p], j:j+CW]; the tail in tiles of 4, 2, then 1 vector,
// then one float at a time. UN nonzeros a step each feed their own accumulators (summed at the row's end):
// an FMA waits for the previous one into the same register (4 cycles on Zen 3), so NV * UN
// independent chains keep both FMA pipes busy. PD > 0 prefetches the tile's B lines of nonzero
// p + PD, past the row's end into the next rows of the block (their pass over the same tile
// comes later, and finds them in cache), so short rows get their first nonzeros prefetched too.
// The accumulation order per element depends only on the row, so results are deterministic.
//
// 2-D tiles (KP > 0): B reused from L2 at the wide shapes, where a register tile's column panel
// of B (K x CW floats) does not fit L2 (K = 4096, CW = 64: 1 MiB against Zen 3's 512 KiB). K is
// cut into ranges of KR rows of B (KR * CW * 4 bytes <= KP KiB). Once per block each nonzero's
// column becomes an int offset col * N (so the conversion is done once, not once per tile), and
// each row is cut where its columns cross a range (binary search; on a row whose columns do not
// ascend the cuts still partition it, only without the reuse). Then per register tile, per K
// range, every row of the block adds its nonzeros of that range to its C tile (stored by the
// first range, loaded, added and stored by the others): the KR x CW panel of B the block's rows
// gather from stays in L2 for the whole range. Where K is a single range (K <= KR) the same walk,
// tile by tile over the block's rows, keeps that tile's whole panel in L2 (the one-pass path
// walks every tile of a row before the next row: all of B's strip at once). Each element still
// sums its row's nonzeros in their stored order, the one-pass path's result. Where K needs
// several ranges but the block uses a B row fewer than KMIN / 8 times on average (sparse blocks:
// nothing to reuse, and a C load and store per range and row), the one-pass path runs.
//
// Parameters (#defines): BN columns per strip, NV vectors per register tile, UN nonzeros a step
// (1, 2 or 4), VW floats per vector (0: the widest the compiler targets), RBLOCKS row blocks,
// L2KB the panel's budget in KiB (0: the whole strip, one panel), PD the prefetch distance in
// nonzeros (0: none), KP the 2-D tile's B panel in KiB (0: the one-pass path above), KMIN eight
// times the least mean uses of a B row in a range for the block to split K.

#include "kernels/common/spmm_rows.hpp"  // CW, first_row_at, spmm_rows: this kernel's code

static void spmm_block(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* values,
                       const float* B, float* C, int M, int K, int N, int NNZ, float pattern) {
  (void)NNZ, (void)pattern;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const long long nb = ctx.grid_dim.y, b = ctx.block_idx.y;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  spmm_rows(row_ptr, col_idx, values, B, C, K, N, r0, r1, n0, nc);
}

KF_KERNEL(spmm, spmm_block)
