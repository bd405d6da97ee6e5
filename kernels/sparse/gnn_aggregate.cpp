// gnn_aggregate for the cpu backend: out[r, :] = Σ w(r, c) · H[c, :] over row r's edges (plus
// GCN's self term), the weights from the degrees that row_ptr gives (gnn_problem.hpp).
//
// The scheme of spmm.cpp (read it for the why): (ceil(N / BN) column strips) x (RBLOCKS row
// blocks of equal work by the cost prefix row_ptr[r] + r); each row's strip in NV vectors of VW
// floats, vector and scalar tails. A nonzero's value is its weight, computed where it is used:
// kind 0 (GCN) 1 / sqrt((1 + len_r)(1 + len_c)), starting from the self term H[r, :] / (1 + len_r);
// kind 1 (mean) 1 / len_r.
//
// Parameters (#defines): BN columns per strip, NV vectors per register tile, VW floats per
// vector (0: widest), RBLOCKS row blocks.
#include "kernels/common/gnn_rows.hpp"  // gnn_edges: a row's weighted sum (shared with the adaptive kernel)

#include "kernels/common/equal_work_rows.hpp"  // first_row_at: equal-work row blocks

static void gnn_block(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* H, float* out,
                      int M, int N, int NNZ, float pattern, float kind) {
  (void)NNZ, (void)pattern;
  const bool gcn = kind == 0.0f;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const long long nb = ctx.grid_dim.y, b = ctx.block_idx.y;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  for (int r = r0; r < r1; ++r)
    gnn_edges(gcn, row_ptr, col_idx, H, N, r, row_ptr[r], row_ptr[r + 1], true, n0, nc,
              out + (long long)r * N + n0);
}

KF_KERNEL(gnn_aggregate, gnn_block)
