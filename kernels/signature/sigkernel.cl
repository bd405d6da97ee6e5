// sigkernel for the opencl backend: the Gram matrix K (B1,B2) of the signature kernel between
// the paths X (B1,L1,D) and Y (B2,L2,D), by the explicit scheme of its Goursat PDE on the grid
// of increments refined 2^DYADIC times (kernels/signature/README.md):
//   K[i+1][j+1] = (K[i+1][j] + K[i][j+1]) c1 - K[i][j] c2,   K = 1 on the first row and column,
//   a = <Δx, Δy> / 4^DYADIC of the cell's coarse increments, c1 = 1 + a/2 + a²/12, c2 = 1 - a²/12
//
// One work-item per pair (x_a, y_b): it sweeps the grid row by row, keeping one row of K in
// private memory (MAXN floats; a constraint keeps the fine row length n2 + 1 <= MAXN). A cell's
// coefficients are computed where a coarse column begins and serve the fine cells of its row.
//
// Parameters (all #defines):
//   WG    work-items per group
//   MAXN  the longest fine row the private buffer holds
typedef kf_storage T;  // fp32

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sigkernel(__global const T* X, __global const T* Y, __global T* K, int B1, int B2, int L1, int L2, int D,
               int DYADIC) {
  const long p = get_global_id(0);
  if (p >= (long)B1 * B2) return;
  const long a = p / B2, b = p % B2;
  __global const T* x = X + a * L1 * D;
  __global const T* y = Y + b * L2 * D;
  const int n1 = (L1 - 1) << DYADIC, n2 = (L2 - 1) << DYADIC, fine = (1 << DYADIC) - 1;
  const float scale = 1.0f / (float)(1 << (2 * DYADIC));  // a power of two: exact
  const float twelfth = 0.0833333333333f;  // 1/12 correctly rounded (no division here)
  float row[MAXN];
  for (int q = 0; q <= n2; ++q) row[q] = 1.0f;
  for (int i = 0; i < n1; ++i) {
    const int ci = i >> DYADIC;
    float kl = 1.0f, kd = row[0], c1 = 1.0f, c2 = 1.0f;
    for (int q = 1; q <= n2; ++q) {
      if (((q - 1) & fine) == 0) {
        const int cj = (q - 1) >> DYADIC;
        float s = 0.0f;
        for (int d = 0; d < D; ++d) s += (x[(ci + 1) * D + d] - x[ci * D + d]) * (y[(cj + 1) * D + d] - y[cj * D + d]);
        const float aa = s * scale, sq = aa * aa * twelfth;
        c1 = 1.0f + aa * 0.5f + sq;
        c2 = 1.0f - sq;
      }
      const float ku = row[q];
      const float kn = (kl + ku) * c1 - kd * c2;
      row[q] = kn;
      kl = kn, kd = ku;
    }
  }
  K[p] = row[n2];
}
