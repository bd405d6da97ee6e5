// fusedmm for the opencl backend: out[r, :] = Σ_{p in row r} op(X[r, :] · Y[c_p, :]) · Z[c_p, :].
//
// One work-group of WX work-items per row. The row goes in chunks of WX nonzeros: work-item i
// computes the chunk's i-th sampled value (a dot product of length D) into local memory, with
// its column; a barrier; then every work-item updates its own columns j = lx + k * WX (k < CPT,
// in passes of WX * CPT columns) over the chunk's nonzeros, in order: coalesced reads of Z's
// rows, sums in registers, stored after the first chunk and loaded, added and stored after the
// others (each element has one writer, summed in the row's order). The sampled values live in
// local memory only. Empty rows store zeros.
//
// Parameters (#defines): WX work-items per row (the chunk length), CPT columns per work-item
// per pass.
__kernel void fusedmm(__global const int* row_ptr, __global const int* col_idx, __global const float* X,
                      __global const float* Y, __global const float* Z, __global float* out, int M, int K,
                      int D, int N, int NNZ, float pattern, float op) {
  __local float w[WX];
  __local int col[WX];
  const int r = get_group_id(0), lx = get_local_id(0);
  const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
  __global const float* x = X + (long)r * D;
  __global float* o = out + (long)r * N;
  if (p0 == p1) {  // the whole group leaves together: no barrier is skipped by some only
    for (int j = lx; j < N; j += WX) o[j] = 0.0f;
    return;
  }
  for (int q = p0; q < p1; q += WX) {
    const int n = min(WX, p1 - q);
    if (lx < n) {
      const int c = col_idx[q + lx];
      __global const float* y = Y + (long)c * D;
      float s = 0.0f;
      for (int d = 0; d < D; ++d) s += x[d] * y[d];
      w[lx] = op == 1.0f ? 1.0f / (1.0f + exp(-s)) : s;
      col[lx] = c;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j0 = lx; j0 < N; j0 += WX * CPT) {
      float acc[CPT];
      for (int k = 0; k < CPT; ++k) {
        const int j = j0 + k * WX;
        acc[k] = q == p0 || j >= N ? 0.0f : o[j];
      }
      for (int i = 0; i < n; ++i) {
        const float a = w[i];
        __global const float* z = Z + (long)col[i] * N;
        for (int k = 0; k < CPT; ++k) {
          const int j = j0 + k * WX;
          if (j < N) acc[k] += a * z[j];
        }
      }
      for (int k = 0; k < CPT; ++k) {
        const int j = j0 + k * WX;
        if (j < N) o[j] = acc[k];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // the chunk's w and col are read before the next overwrites them
  }
}
