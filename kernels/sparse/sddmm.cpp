// sddmm for the cpu backend: out[p] = A[r, :] . B[col_idx[p], :] for each nonzero p of row r.
//
// Grid: RBLOCKS row blocks of equal work (rows whose cost prefix row_ptr[r] + r falls in the
// block's share, by binary search on row_ptr, as spmm.cpp). A row's nonzeros go 8 at a time
// through fusedmm.cpu's dot phase (kernels/common/dot8.hpp: 8 one-vector accumulators, each
// load of A's row, from L1, feeding 8 FMAs with 8 neighbours' rows of B, then one shuffle tree
// to a vector of the 8 dots, stored as it is when the group is whole and D a multiple of the
// vector), so kforge's sddmm followed by its spmm is as fast as fusedmm's dot phase and the
// fused/unfused comparison (bench/fusedmm_vs_unfused) measures the fusion alone. D % KF_VW
// columns are added scalar; a short last group repeats its first column (those sums are not
// kept). The last block writes 0 to the unused entries past row_ptr[M].
//
// Parameters (#defines): VW floats per vector (0: widest), RBLOCKS row blocks.
#include "kernels/common/equal_work_rows.hpp"  // first_row_at: equal-work row blocks
#include "kernels/common/dot8.hpp"             // dot8: 8 dot products, one shuffle-tree sum

// o[0:n] = a · B[col[i]] for the n <= 8 nonzeros at col.
static inline void dots(const float* a, const int* col, int n, const float* B, int D, float* o) {
  const float* y[8];
  for (int i = 0; i < 8; ++i) y[i] = B + (long long)(int)col[i < n ? i : 0] * D;
  const dot8_sums sums = dot8(a, y, D);
  const int d = D - D % KF_VW;
  if (n == 8 && d == D) {  // a whole group, no tail: the 8 sums are the 8 outputs
    __builtin_memcpy(o, &sums, sizeof sums);
    return;
  }
  float s[8];
  __builtin_memcpy(s, &sums, sizeof s);
  for (int i = 0; i < n; ++i) {
    float t = s[i];
    for (int e = d; e < D; ++e) t += a[e] * y[i][e];
    o[i] = t;
  }
}

static void sddmm_block(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* A,
                        const float* B, float* out, int M, int K, int D, int NNZ, float pattern) {
  (void)K, (void)pattern;
  const long long nb = ctx.grid_dim.x, b = ctx.block_idx.x;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  for (int r = r0; r < r1; ++r) {
    const float* a = A + (long long)r * D;
    const int p1 = row_ptr[r + 1];
    for (int p = row_ptr[r]; p < p1; p += 8)
      dots(a, col_idx + p, p1 - p < 8 ? p1 - p : 8, B, D, out + p);
  }
  if (b == nb - 1)
    for (int p = row_ptr[M]; p < NNZ; ++p) out[p] = 0;
}

KF_KERNEL(sddmm, sddmm_block)
