// sddmm for the opencl backend: out[p] = A[r, :] . B[col_idx[p], :] for each nonzero p of row r.
//
// One work-item per PPT consecutive nonzeros (an edge-parallel split: every work-item has the
// same work however uneven the rows are). Its row is found by binary search on row_ptr once,
// then advanced as p crosses row ends. Entries past row_ptr[M] get 0.
//
// Parameters (#defines): WG work-items per group, PPT nonzeros per work-item.
__kernel void sddmm(__global const int* row_ptr, __global const int* col_idx,
                    __global const float* A, __global const float* B, __global float* out,
                    int M, int K, int D, int NNZ, float pattern) {
  const int first = get_global_id(0) * PPT;
  if (first >= NNZ) return;
  const int used = row_ptr[M];
  int lo = 0, hi = M - 1;  // the row r with row_ptr[r] <= first < row_ptr[r + 1]
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (row_ptr[mid] <= first) lo = mid;
    else hi = mid - 1;
  }
  int r = lo;
  for (int p = first; p < first + PPT && p < NNZ; ++p) {
    if (p >= used) { out[p] = 0.0f; continue; }
    while (row_ptr[r + 1] <= p) ++r;
    __global const float* a = A + (long)r * D;
    __global const float* b = B + (long)col_idx[p] * D;
    float s = 0.0f;
    for (int d = 0; d < D; ++d) s += a[d] * b[d];
    out[p] = s;
  }
}
