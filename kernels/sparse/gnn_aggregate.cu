// gnn_aggregate for the cuda backend: the scheme of gnn_aggregate.cl (and spmm.cu): block (WX, WY)
// owns WY rows and a strip of WX * CPT columns; thread (x, y) sums row r's weighted messages for
// columns n0 + x + k * WX in registers, coalesced loads of H's rows; the weights from the degrees
// row_ptr gives (kind 0 GCN: 1 / sqrt((1 + len_r)(1 + len_c)) plus the self term; 1 mean).
//
// Parameters (#defines): WX threads along columns, CPT columns per thread, WY rows per block.
extern "C" __global__ void __launch_bounds__(WX * WY)
gnn_aggregate(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ H,
              float* __restrict__ out, int M, int N, int NNZ, float pattern, float kind) {
  const int r = blockIdx.y * WY + threadIdx.y;
  if (r >= M) return;
  const bool gcn = kind == 0.0f;
  const int n0 = blockIdx.x * (WX * CPT) + threadIdx.x;
  const int p0 = __ldg(row_ptr + r), p1 = __ldg(row_ptr + r + 1);
  const float len_r = (float)(p1 - p0), self = gcn ? 1.0f / (1.0f + len_r) : 0.0f;
  float acc[CPT];
#pragma unroll
  for (int k = 0; k < CPT; ++k) {
    const int j = n0 + k * WX;
    acc[k] = gcn && j < N ? self * __ldg(H + (long long)r * N + j) : 0.0f;
  }
  for (int p = p0; p < p1; ++p) {
    const int c = __ldg(col_idx + p);
    const float len_c = __ldg(row_ptr + c + 1) - __ldg(row_ptr + c);
    const float w = gcn ? 1.0f / sqrtf((1.0f + len_r) * (1.0f + len_c)) : 1.0f / len_r;
    const float* h = H + (long long)c * N;
#pragma unroll
    for (int k = 0; k < CPT; ++k) {
      const int j = n0 + k * WX;
      if (j < N) acc[k] = fmaf(w, __ldg(h + j), acc[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < CPT; ++k) {
    const int j = n0 + k * WX;
    if (j < N) out[(long long)r * N + j] = acc[k];
  }
}
