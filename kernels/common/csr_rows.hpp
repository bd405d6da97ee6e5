// spmm's former CSR row loop for the cpu backend (NV=2 era), now spmm_adaptive.cpp's CSR path:
// rows [r0, r1) of the column strip [n0, n0 + nc) of C = A * B, A in CSR. Each row's strip is
// accumulated in CW = NV * KF_VW columns of registers per pass over the row's nonzeros, then
// one vector, then one float at a time; the accumulation order per element is the row's order.
// Needs NV defined.
#define CW (NV * KF_VW)

static void csr_rows(const float* row_ptr, const float* col_idx, const float* values, const float* B, float* C,
                     int N, int r0, int r1, int n0, int nc) {
  for (int r = r0; r < r1; ++r) {
    const int p0 = (int)row_ptr[r], p1 = (int)row_ptr[r + 1];
    float* c = C + (long long)r * N + n0;
    const float* bcol = B + n0;
    int j = 0;
    for (; j + CW <= nc; j += CW) {
      kf_vf acc[NV] = {};
      for (int p = p0; p < p1; ++p) {
        const kf_vf a = kf_splat(values[p]);
        const float* brow = bcol + (long long)(int)col_idx[p] * N + j;
        for (int v = 0; v < NV; ++v) acc[v] += a * kf_load(brow + v * KF_VW);
      }
      for (int v = 0; v < NV; ++v) kf_store(c + j + v * KF_VW, acc[v]);
    }
    for (; j < nc; ++j) {
      float acc = 0;
      for (int p = p0; p < p1; ++p) acc += values[p] * bcol[(long long)(int)col_idx[p] * N + j];
      c[j] = acc;
    }
  }
}
