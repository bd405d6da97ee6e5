// gnn_attention for the cuda backend: the scheme of gnn_attention.cl. Block (WX, WY) owns WY rows
// and a strip of WX * CPT columns; each thread runs its row's online softmax (running maximum and
// sum) over the edges, computing every score itself (no barrier: rows of different lengths never
// wait), and accumulates its columns of V in registers; out[r, :] = acc / sum.
//
// Parameters (#defines): WX threads along columns, CPT columns per thread, WY rows per block.
// exp(x) for x <= 0, flushed to 0 below fp32's normal range (within the bound).
__device__ __forceinline__ float kf_weight(float x) { return x > -87.0f ? expf(x) : 0.0f; }

extern "C" __global__ void __launch_bounds__(WX * WY)
gnn_attention(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ Q,
              const float* __restrict__ K, const float* __restrict__ V, float* __restrict__ out, int M, int D, int N,
              int NNZ, float pattern, float scale) {
  const int r = blockIdx.y * WY + threadIdx.y;
  if (r >= M) return;
  const int n0 = blockIdx.x * (WX * CPT) + threadIdx.x;
  const int p0 = __ldg(row_ptr + r), p1 = __ldg(row_ptr + r + 1);
  const float* q = Q + (long long)r * D;
  float acc[CPT];
#pragma unroll
  for (int k = 0; k < CPT; ++k) acc[k] = 0.0f;
  float mx = KF_NEG_INF, sum = 0.0f;
  for (int p = p0; p < p1; ++p) {
    const int c = __ldg(col_idx + p);
    const float* kc = K + (long long)c * D;
    float dot = 0.0f;
    for (int d = 0; d < D; ++d) dot = fmaf(__ldg(q + d), __ldg(kc + d), dot);
    const float s = scale * dot;
    if (s > mx) {  // a new maximum: what was summed so far shrinks by exp(old - new)
      const float f = kf_weight(mx - s);
      sum *= f;
#pragma unroll
      for (int k = 0; k < CPT; ++k) acc[k] *= f;
      mx = s;
    }
    const float w = kf_weight(s - mx);
    sum += w;
    const float* v = V + (long long)c * N;
#pragma unroll
    for (int k = 0; k < CPT; ++k) {
      const int j = n0 + k * WX;
      if (j < N) acc[k] = fmaf(w, __ldg(v + j), acc[k]);
    }
  }
  const float inv = p1 > p0 ? 1.0f / sum : 0.0f;  // a row without edges: 0
#pragma unroll
  for (int k = 0; k < CPT; ++k) {
    const int j = n0 + k * WX;
    if (j < N) out[(long long)r * N + j] = acc[k] * inv;
  }
}
