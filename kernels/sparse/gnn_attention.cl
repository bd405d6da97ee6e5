// gnn_attention for the opencl backend: per row an online softmax over its edges (running
// maximum and sum, no score stored), out[r, :] = acc / sum (gnn_attention_problem.hpp).
// The scheme of gnn_aggregate.cl: work-group (WX, WY), WY rows, each work-item CPT columns
// strided by WX (coalesced rows of V). Every work-item of a row computes the row's scores
// itself (D multiply-adds an edge): no barrier, so rows of different lengths never wait.
//
// Parameters (#defines): WX work-items along columns, CPT columns per work-item, WY rows.
// exp(x) for x <= 0, flushed to 0 below fp32's normal range (within the bound; a subnormal
// weight takes a slow path on CPUs).
inline float kf_weight(float x) { return x > -87.0f ? exp(x) : 0.0f; }

__kernel void gnn_attention(__global const int* row_ptr, __global const int* col_idx,
                            __global const float* Q, __global const float* K, __global const float* V,
                            __global float* out, int M, int D, int N, int NNZ, float pattern, float scale) {
  const int r = get_group_id(1) * WY + get_local_id(1);
  if (r >= M) return;
  const int n0 = get_group_id(0) * (WX * CPT) + get_local_id(0);
  const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
  __global const float* q = Q + (long)r * D;
  float acc[CPT];
  for (int k = 0; k < CPT; ++k) acc[k] = 0.0f;
  float mx = -INFINITY, sum = 0.0f;
  for (int p = p0; p < p1; ++p) {
    const int c = col_idx[p];
    __global const float* kc = K + (long)c * D;
    float dot = 0.0f;
    for (int d = 0; d < D; ++d) dot = fma(q[d], kc[d], dot);
    const float s = scale * dot;
    if (s > mx) {  // a new maximum: what was summed so far shrinks by exp(old - new)
      const float f = kf_weight(mx - s);
      sum *= f;
      for (int k = 0; k < CPT; ++k) acc[k] *= f;
      mx = s;
    }
    const float w = kf_weight(s - mx);
    sum += w;
    __global const float* v = V + (long)c * N;
    for (int k = 0; k < CPT; ++k) {
      const int j = n0 + k * WX;
      if (j < N) acc[k] = fma(w, v[j], acc[k]);
    }
  }
  const float inv = p1 > p0 ? 1.0f / sum : 0.0f;  // a row without edges: 0
  for (int k = 0; k < CPT; ++k) {
    const int j = n0 + k * WX;
    if (j < N) out[(long)r * N + j] = acc[k] * inv;
  }
}
