// gnn_aggregate for the opencl backend: out[r, :] = Σ w(r, c) · H[c, :] over row r's edges (plus
// GCN's self term), the weights from the degrees that row_ptr gives (gnn_problem.hpp).
// The scheme of spmm.cl: work-group (WX, WY), WY rows, each work-item CPT columns strided by WX
// (coalesced rows of H), sums in registers, one writer per element. kind 0 (GCN): weight
// 1 / sqrt((1 + len_r)(1 + len_c)), from the self term H[r, :] / (1 + len_r); kind 1 (mean):
// 1 / len_r.
//
// Parameters (#defines): WX work-items along columns, CPT columns per work-item, WY rows.
__kernel void gnn_aggregate(__global const int* row_ptr, __global const int* col_idx,
                            __global const float* H, __global float* out, int M, int N, int NNZ,
                            float pattern, float kind) {
  const int r = get_group_id(1) * WY + get_local_id(1);
  if (r >= M) return;
  const int gcn = kind == 0.0f;
  const int n0 = get_group_id(0) * (WX * CPT) + get_local_id(0);
  const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
  const float len_r = (float)(p1 - p0), self = gcn ? 1.0f / (1.0f + len_r) : 0.0f;
  float acc[CPT];
  for (int k = 0; k < CPT; ++k) {
    const int j = n0 + k * WX;
    acc[k] = gcn && j < N ? self * H[(long)r * N + j] : 0.0f;
  }
  for (int p = p0; p < p1; ++p) {
    const int c = col_idx[p];
    const float w = gcn ? 1.0f / sqrt((1.0f + len_r) * (1.0f + (row_ptr[c + 1] - row_ptr[c]))) : 1.0f / len_r;
    __global const float* h = H + (long)c * N;
    for (int k = 0; k < CPT; ++k) {
      const int j = n0 + k * WX;
      if (j < N) acc[k] += w * h[j];
    }
  }
  for (int k = 0; k < CPT; ++k) {
    const int j = n0 + k * WX;
    if (j < N) out[(long)r * N + j] = acc[k];
  }
}
