// sigkernel_gram_grad for the cuda backend: two batches X (B1,L1,D), Y (B2,L2,D), an upstream
// gradient G (B1,B2) on their Gram matrix, and GX_a = sum_b G_ab dk(x_a, y_b)/dx_a, GY_b =
// sum_a G_ab dk(x_a, y_b)/dy_b, by the exact adjoint of sigkernel's scheme per pair
// (sigkernel_grad.cu's steps; the mathematics in sigkernel_grad_problem.cpp and README.md):
//   forward   K[p][q] = (K[p][q-1] + K[p-1][q]) c1 - K[p-1][q-1] c2   (every node stored)
//   adjoint   Λ[p][q] = Λ[p][q+1] c1(p,q+1) + Λ[p+1][q] c1(p+1,q) - Λ[p+1][q+1] c2(p+1,q+1)
//   dk/da_c  += Λ[p][q] ((K[p][q-1] + K[p-1][q]) (1/2 + a/6) + K[p-1][q-1] a/6)
//
// The work split (sigkernel_gram_grad.cpp's): one thread owns one output row, so no two
// threads write one row and nothing is reduced across them. The first ceil(B1 / THREADS) blocks'
// threads own the rows of GX (x_a walking every y_b), the others own GY's (y_b walking every
// x_a, the roles swapped: k(x, y) = k(y, x)). Each pair's PDE is solved twice, once per side:
// no workspace, no atomics, no grid-wide barrier. The row's increments' gradients accumulate in
// the thread's own row of the output (its first (L-1) D entries), each pair's summed over the
// other path's increments first; at the end they become the points' gradients, in place.
//
// Everything else in local memory: the grid of K (MAXG floats: a constraint keeps
// (n1+1)(n2+1) <= MAXG), a per coarse cell (zero-padded past the last row and column, where the
// adjoint's neighbours are zero), two rows of Λ and one coarse row of dk/da (MAXN floats: the
// longer path's fine row + 2 <= MAXN, as either side's rows run along the other path).
// Compiled for sm_90 by NVRTC in the CudaBackend test and tests/cuda_compile.cmake; never run
// here (no GPU).
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)
//   MAXG  the largest grid (nodes) the local buffer holds
//   MAXN  the longest fine row + 2 the local rows hold
typedef kf_storage T;  // fp32

extern "C" __global__ void __launch_bounds__(THREADS)
sigkernel_gram_grad(const T* __restrict__ X, const T* __restrict__ Y, const T* __restrict__ G, T* __restrict__ GX,
                    T* __restrict__ GY, int B1, int B2, int L1, int L2, int D, int DYADIC) {
  const int nx = (B1 + THREADS - 1) / THREADS;
  const int side_y = (int)blockIdx.x >= nx;
  const long long p = (long long)blockIdx.x * THREADS + threadIdx.x - (side_y ? (long long)nx * THREADS : 0);
  // This side: the first paths P (Bp,Lp,D) against the others Q (Bq,Lq,D), weights G[p gp + q gq].
  const int Bp = side_y ? B2 : B1, Bq = side_y ? B1 : B2, Lp = side_y ? L2 : L1, Lq = side_y ? L1 : L2;
  const long long gp = side_y ? 1 : B2, gq = side_y ? B2 : 1;
  if (p >= Bp) return;
  const T* x = (side_y ? Y : X) + p * Lp * D;
  const T* Q = side_y ? X : Y;
  T* gx = (side_y ? GY : GX) + p * Lp * D;
  const int C1 = Lp - 1, C2 = Lq - 1, n1 = C1 << DYADIC, n2 = C2 << DYADIC, W = n2 + 1, P = C2 + 1;
  const int fine = (1 << DYADIC) - 1;
  const float scale = 1.0f / (float)(1 << (2 * DYADIC));  // a power of two: exact
  const float twelfth = 0.0833333333333f, sixth = 0.166666666667f;  // correctly rounded, no division
  float K[MAXG], A[MAXG], cur[MAXN], next[MAXN], gar[MAXN];
  for (int e = 0; e < Lp * D; ++e) gx[e] = 0.0f;  // increments' gradients first, points at the end
  for (int e = 0; e < (C1 + 1) * P; ++e) A[e] = 0.0f;
  for (int q = 0; q < Bq; ++q) {
    const T* y = Q + (long long)q * Lq * D;
    for (int i = 0; i < C1; ++i)
      for (int j = 0; j < C2; ++j) {
        float s = 0.0f;
        for (int d = 0; d < D; ++d) s += (x[(i + 1) * D + d] - x[i * D + d]) * (y[(j + 1) * D + d] - y[j * D + d]);
        A[i * P + j] = s * scale;
      }
    // Forward, row by row.
    for (int c = 0; c <= n2; ++c) K[c] = 1.0f;
    for (int r = 1; r <= n1; ++r) {
      const int crow = ((r - 1) >> DYADIC) * P;
      K[r * W] = 1.0f;
      for (int c = 1; c <= n2; ++c) {
        const float a = A[crow + ((c - 1) >> DYADIC)], sq = a * a * twelfth;
        K[r * W + c] = (K[r * W + c - 1] + K[(r - 1) * W + c]) * (1.0f + a * 0.5f + sq) - K[(r - 1) * W + c - 1] * (1.0f - sq);
      }
    }
    for (int c = 0; c <= W; ++c) cur[c] = next[c] = 0.0f;
    for (int j = 0; j < C2; ++j) gar[j] = 0.0f;
    // Adjoint, rows from the last; c1 and c2 of a zero-padded a are 1, but they multiply zeros.
    const float seed = G[p * gp + q * gq];
    for (int r = n1; r >= 1; --r) {
      const int own = ((r - 1) >> DYADIC) * P, below = (r >> DYADIC) * P;
      for (int c = n2; c >= 1; --c) {
        const float ar = A[own + (c >> DYADIC)], ad = A[below + ((c - 1) >> DYADIC)], ag = A[below + (c >> DYADIC)];
        const float lam = (r == n1 && c == n2 ? seed : 0.0f) + cur[c + 1] * (1.0f + ar * 0.5f + ar * ar * twelfth) +
                          next[c] * (1.0f + ad * 0.5f + ad * ad * twelfth) - next[c + 1] * (1.0f - ag * ag * twelfth);
        cur[c] = lam;
        const float a = A[own + ((c - 1) >> DYADIC)];
        gar[(c - 1) >> DYADIC] += lam * ((K[r * W + c - 1] + K[(r - 1) * W + c]) * (0.5f + a * sixth) + K[(r - 1) * W + c - 1] * (a * sixth));
      }
      for (int c = 0; c <= W; ++c) {
        const float t = cur[c];
        cur[c] = next[c], next[c] = t;
      }
      if (((r - 1) & fine) == 0) {  // coarse row ci is done: this pair's share of increment ci
        const int ci = (r - 1) >> DYADIC;
        for (int d = 0; d < D; ++d) {
          float s = 0.0f;
          for (int j = 0; j < C2; ++j) s += gar[j] * (y[(j + 1) * D + d] - y[j * D + d]);
          gx[ci * D + d] += s * scale;
        }
        for (int j = 0; j < C2; ++j) gar[j] = 0.0f;
      }
    }
  }
  // Increments into points, in place from the last point (slot t holds increment t's gradient
  // until point t is written; point t reads slots t-1 and t).
  for (int t = C1; t >= 0; --t)
    for (int d = 0; d < D; ++d)
      gx[t * D + d] = (t > 0 ? gx[(t - 1) * D + d] : 0.0f) - (t < C1 ? gx[t * D + d] : 0.0f);
}
