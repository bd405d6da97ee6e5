// sigkernel for the cuda backend: the Gram matrix K (B1,B2) of the signature kernel between
// the paths X (B1,L1,D) and Y (B2,L2,D), by the explicit scheme of its Goursat PDE on the grid
// of increments refined 2^DYADIC times (kernels/signature/README.md):
//   K[i+1][j+1] = (K[i+1][j] + K[i][j+1]) c1 - K[i][j] c2,   K = 1 on the first row and column,
//   a = <Δx, Δy> / 4^DYADIC of the cell's coarse increments, c1 = 1 + a/2 + a²/12, c2 = 1 - a²/12
//
// One thread per pair (x_a, y_b), sweeping the grid row by row with one row of K in its local
// memory (MAXN floats; a constraint keeps n2 + 1 <= MAXN). Not yet written: a block per pair
// sweeping anti-diagonals in shared memory (the usual GPU form), faster for few long paths.
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)
//   MAXN     the longest fine row the buffer holds
typedef kf_storage T;  // fp32

extern "C" __global__ void __launch_bounds__(THREADS)
sigkernel(const T* __restrict__ X, const T* __restrict__ Y, T* __restrict__ K, int B1, int B2, int L1, int L2,
          int D, int DYADIC) {
  const long long p = (long long)blockIdx.x * THREADS + threadIdx.x;
  if (p >= (long long)B1 * B2) return;
  const long long a = p / B2, b = p % B2;
  const T* x = X + a * L1 * D;
  const T* y = Y + b * L2 * D;
  const int n1 = (L1 - 1) << DYADIC, n2 = (L2 - 1) << DYADIC, fine = (1 << DYADIC) - 1;
  const float scale = 1.0f / (float)(1 << (2 * DYADIC));  // a power of two: exact
  const float twelfth = 1.0f / 12.0f;
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
