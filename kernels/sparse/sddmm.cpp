// sddmm for the cpu backend: out[p] = A[r, :] . B[col_idx[p], :] for each nonzero p of row r.
//
// Grid: RBLOCKS row blocks of equal work (rows whose cost prefix row_ptr[r] + r falls in the
// block's share, by binary search on row_ptr, as spmm.cpp). Each nonzero is one dot product of
// length D, vectorized with NV independent accumulators of VW floats (the row of A stays in L1
// across the row's nonzeros). The last block writes 0 to the unused entries past row_ptr[M].
//
// Parameters (#defines): NV accumulators, VW floats per vector (0: widest), RBLOCKS row blocks.
#include "kernels/common/equal_work_rows.hpp"  // first_row_at: equal-work row blocks

static inline float dot(const float* a, const float* b, int D) {
  kf_vf acc[NV] = {};
  int d = 0;
  for (; d + NV * KF_VW <= D; d += NV * KF_VW)
    for (int v = 0; v < NV; ++v) acc[v] += kf_load(a + d + v * KF_VW) * kf_load(b + d + v * KF_VW);
  for (; d + KF_VW <= D; d += KF_VW) acc[0] += kf_load(a + d) * kf_load(b + d);
  for (int v = 1; v < NV; ++v) acc[0] += acc[v];
  float s = 0;
  for (int l = 0; l < KF_VW; ++l) s += acc[0][l];
  for (; d < D; ++d) s += a[d] * b[d];
  return s;
}

static void sddmm_block(const kf_ctx& ctx, const float* row_ptr, const float* col_idx, const float* A,
                        const float* B, float* out, int M, int K, int D, int NNZ, float pattern) {
  (void)K, (void)pattern;
  const long long nb = ctx.grid_dim.x, b = ctx.block_idx.x;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  for (int r = r0; r < r1; ++r) {
    const float* a = A + (long long)r * D;
    for (int p = (int)row_ptr[r]; p < (int)row_ptr[r + 1]; ++p)
      out[p] = dot(a, B + (long long)(int)col_idx[p] * D, D);
  }
  if (b == nb - 1)
    for (int p = (int)row_ptr[M]; p < NNZ; ++p) out[p] = 0;
}

KF_KERNEL(sddmm, sddmm_block)
