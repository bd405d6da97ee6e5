// spmm for the opencl backend: C = A * B with A in CSR.
//
// Work-group (WX, WY): WY rows, WX work-items across a strip of BN = WX * CPT columns. Work-item
// (lx, ly) owns row r = group_y * WY + ly and columns n0 + lx + k * WX (k < CPT): neighbouring
// work-items read neighbouring columns of B's row col_idx[p] (coalesced), each row's structure
// is read once per strip, and the CPT sums stay in registers. No barriers, no atomics: each
// element of C has one writer, summed in the row's order (deterministic).
//
// Parameters (#defines): WX work-items along columns, CPT columns per work-item, WY rows.
__kernel void spmm(__global const int* row_ptr, __global const int* col_idx,
                   __global const float* values, __global const float* B, __global float* C,
                   int M, int K, int N, int NNZ, float pattern) {
  const int r = get_group_id(1) * WY + get_local_id(1);
  if (r >= M) return;
  const int n0 = get_group_id(0) * (WX * CPT) + get_local_id(0);
  float acc[CPT];
  for (int k = 0; k < CPT; ++k) acc[k] = 0.0f;
  const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
  for (int p = p0; p < p1; ++p) {
    const float a = values[p];
    __global const float* b = B + (long)col_idx[p] * N;
    for (int k = 0; k < CPT; ++k) {
      const int j = n0 + k * WX;
      if (j < N) acc[k] += a * b[j];
    }
  }
  for (int k = 0; k < CPT; ++k) {
    const int j = n0 + k * WX;
    if (j < N) C[(long)r * N + j] = acc[k];
  }
}
