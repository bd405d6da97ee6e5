// gnn_aggregate's row loop for the cpu backend, shared by gnn_aggregate.cpp and
// gnn_aggregate_adaptive.cpp (its CSR path and the pieces of its edge-parallel path): the sum
// over edges [p0, p1) of row r, Σ w(r, c_p) · H[c_p, n0 .. n0 + nc), plus (with `self`) GCN's
// self term H[r, ...] / (1 + len_r), written to dst[0 .. nc). The weights come from the degrees
// in row_ptr (gnn_problem.hpp): GCN 1 / sqrt((1 + len_r)(1 + len_c)), mean 1 / len_r.
// Needs NV defined; accumulates CW = NV * KF_VW columns in registers per pass over the edges,
// then one vector, then one float at a time, each element in the edges' order.
#define CW (NV * KF_VW)

static inline float gnn_weight(bool gcn, const int* row_ptr, float len_r, int c) {
  return gcn ? 1.0f / __builtin_sqrtf((1.0f + len_r) * (1.0f + (row_ptr[c + 1] - row_ptr[c]))) : 1.0f / len_r;
}

static void gnn_edges(bool gcn, const int* row_ptr, const int* col_idx, const float* H, int N, int r, int p0,
                      int p1, bool self, int n0, int nc, float* dst) {
  const float len_r = row_ptr[r + 1] - row_ptr[r], wself = 1.0f / (1.0f + len_r);
  const bool with_self = gcn && self;
  const float* hcol = H + n0;
  const float* hself = hcol + (long long)r * N;
  int j = 0;
  for (; j + CW <= nc; j += CW) {
    kf_vf acc[NV] = {};  // the mean has no self term: never 0 * H[r] (a NaN if H[r] were inf)
    if (with_self)
      for (int v = 0; v < NV; ++v) acc[v] = kf_splat(wself) * kf_load(hself + j + v * KF_VW);
    for (int p = p0; p < p1; ++p) {
      const int c = col_idx[p];
      const kf_vf w = kf_splat(gnn_weight(gcn, row_ptr, len_r, c));
      const float* h = hcol + (long long)c * N + j;
      for (int v = 0; v < NV; ++v) acc[v] += w * kf_load(h + v * KF_VW);
    }
    for (int v = 0; v < NV; ++v) kf_store(dst + j + v * KF_VW, acc[v]);
  }
  for (; j + KF_VW <= nc; j += KF_VW) {
    kf_vf acc = {};
    if (with_self) acc = kf_splat(wself) * kf_load(hself + j);
    for (int p = p0; p < p1; ++p) {
      const int c = col_idx[p];
      acc += kf_splat(gnn_weight(gcn, row_ptr, len_r, c)) * kf_load(hcol + (long long)c * N + j);
    }
    kf_store(dst + j, acc);
  }
  for (; j < nc; ++j) {
    float acc = with_self ? wself * hself[j] : 0.0f;
    for (int p = p0; p < p1; ++p) {
      const int c = col_idx[p];
      acc += gnn_weight(gcn, row_ptr, len_r, c) * hcol[(long long)c * N + j];
    }
    dst[j] = acc;
  }
}
