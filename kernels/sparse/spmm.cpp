// spmm for the cpu backend: C = A * B with A in CSR, vectorized over B's and C's columns.
//
// Grid: (ceil(N / BN) column strips) x (RBLOCKS row blocks). Row blocks get equal WORK, not
// equal rows: block b takes the rows whose cost prefix, row_ptr[r] + r (a row costs its
// nonzeros plus one for writing its output row), falls in [b, b+1) * total / RBLOCKS, found by
// binary search on row_ptr. So a power-law matrix's long rows share no block with many others
// and a dense row is one block's whole work, with no sort and no scratch (the pool hands blocks
// to threads as they free up, which balances what equal cost leaves uneven).
//
// Each row's strip is accumulated in CW = NV * VW columns of registers per pass over the row's
// nonzeros: acc += values[p] * B[col_idx[p], j:j+CW]; tail columns one vector then one float at
// a time (kernels/common/csr_rows.hpp). The accumulation order per element is the row's order,
// so results are deterministic.
//
// Parameters (#defines): BN columns per strip, NV vectors per register tile, VW floats per
// vector (0: the widest the compiler targets), RBLOCKS row blocks.
#include "kernels/common/csr_rows.hpp"  // CW, csr_rows

// The first row whose cost prefix row_ptr[r] + r reaches `target` (rows 0..M).
static int first_row_at(const float* row_ptr, int M, double target) {
  int lo = 0, hi = M;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if ((double)row_ptr[mid] + mid < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void spmm_block(const kf_ctx& ctx, const float* row_ptr, const float* col_idx, const float* values,
                       const float* B, float* C, int M, int K, int N, int NNZ, float pattern) {
  (void)K, (void)NNZ, (void)pattern;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const long long nb = ctx.grid_dim.y, b = ctx.block_idx.y;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  csr_rows(row_ptr, col_idx, values, B, C, N, r0, r1, n0, nc);
}

KF_KERNEL(spmm, spmm_block)
