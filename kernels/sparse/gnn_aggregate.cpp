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
#include <cmath>

#define CW (NV * KF_VW)

static int first_row_at(const float* row_ptr, int M, double target) {
  int lo = 0, hi = M;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if ((double)row_ptr[mid] + mid < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static inline float edge_weight(bool gcn, const float* row_ptr, float len_r, int c) {
  return gcn ? 1.0f / std::sqrt((1.0f + len_r) * (1.0f + (row_ptr[c + 1] - row_ptr[c]))) : 1.0f / len_r;
}

static void gnn_block(const kf_ctx& ctx, const float* row_ptr, const float* col_idx, const float* H, float* out,
                      int M, int N, int NNZ, float pattern, float kind) {
  (void)NNZ, (void)pattern;
  const bool gcn = kind == 0.0f;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const long long nb = ctx.grid_dim.y, b = ctx.block_idx.y;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  for (int r = r0; r < r1; ++r) {
    const int p0 = (int)row_ptr[r], p1 = (int)row_ptr[r + 1];
    const float len_r = (float)(p1 - p0), self = gcn ? 1.0f / (1.0f + len_r) : 0.0f;
    float* o = out + (long long)r * N + n0;
    const float* hcol = H + n0;
    const float* hself = hcol + (long long)r * N;
    int j = 0;
    for (; j + CW <= nc; j += CW) {
      kf_vf acc[NV] = {};  // the mean has no self term: never 0 * H[r] (a NaN if H[r] were inf)
      if (gcn)
        for (int v = 0; v < NV; ++v) acc[v] = kf_splat(self) * kf_load(hself + j + v * KF_VW);
      for (int p = p0; p < p1; ++p) {
        const int c = (int)col_idx[p];
        const kf_vf w = kf_splat(edge_weight(gcn, row_ptr, len_r, c));
        const float* h = hcol + (long long)c * N + j;
        for (int v = 0; v < NV; ++v) acc[v] += w * kf_load(h + v * KF_VW);
      }
      for (int v = 0; v < NV; ++v) kf_store(o + j + v * KF_VW, acc[v]);
    }
    for (; j + KF_VW <= nc; j += KF_VW) {
      kf_vf acc = {};
      if (gcn) acc = kf_splat(self) * kf_load(hself + j);
      for (int p = p0; p < p1; ++p) {
        const int c = (int)col_idx[p];
        acc += kf_splat(edge_weight(gcn, row_ptr, len_r, c)) * kf_load(hcol + (long long)c * N + j);
      }
      kf_store(o + j, acc);
    }
    for (; j < nc; ++j) {
      float acc = gcn ? self * hself[j] : 0.0f;
      for (int p = p0; p < p1; ++p) {
        const int c = (int)col_idx[p];
        acc += edge_weight(gcn, row_ptr, len_r, c) * hcol[(long long)c * N + j];
      }
      o[j] = acc;
    }
  }
}

KF_KERNEL(gnn_aggregate, gnn_block)
