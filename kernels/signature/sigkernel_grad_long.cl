// sigkernel_grad for the opencl backend, long paths: sigkernel_grad.cl's algorithm (read its
// comment) with its buffers in the problem's workspace Wk (a scratch tensor) instead of private
// memory, so the grid has no MAXG/MAXN limit (the problem caps it at 2^20 nodes per pair). Per
// pair, at Wk + b * stride (stride: sigkernel_grad_problem.cpp's workspace_per_pair): the K grid
// ((n1+1)(n2+1)), a per coarse cell ((C1+1)(C2+1), zero-padded), the two Λ rows (n2+2 each) and
// one coarse row of dk/da (C2+1). One work-item per pair, as the short kernel: the grid's rows
// are walked by one work-item, so neighbouring work-items' accesses are a whole grid apart (not
// coalesced); the block-per-pair anti-diagonal sweep is the next step.
//
// Parameters (all #defines):
//   WG    work-items per group
typedef kf_storage T;  // fp32

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sigkernel_grad_long(__global const T* X, __global const T* Y, __global const T* GK, __global T* GX, __global T* GY,
                    __global T* Wk, int B, int L1, int L2, int D, int DYADIC) {
  const long b = get_global_id(0);
  if (b >= B) return;
  __global const T* x = X + b * L1 * D;
  __global const T* y = Y + b * L2 * D;
  __global T* gx = GX + b * L1 * D;
  __global T* gy = GY + b * L2 * D;
  const int C1 = L1 - 1, C2 = L2 - 1, n1 = C1 << DYADIC, n2 = C2 << DYADIC, W = n2 + 1, P = C2 + 1;
  const int fine = (1 << DYADIC) - 1;
  const float scale = 1.0f / (float)(1 << (2 * DYADIC));  // a power of two: exact
  const float twelfth = 0.0833333333333f, sixth = 0.166666666667f;  // correctly rounded, no division
  const long G = (long)(n1 + 1) * (n2 + 1), stride = G + (long)(C1 + 1) * P + 2 * (n2 + 2) + P;
  __global T* K = Wk + b * stride;
  __global T* A = K + G;
  __global T* cur = A + (long)(C1 + 1) * P;
  __global T* next = cur + (n2 + 2);
  __global T* gar = next + (n2 + 2);
  for (int e = 0; e < (C1 + 1) * P; ++e) A[e] = 0.0f;
  for (int i = 0; i < C1; ++i)
    for (int j = 0; j < C2; ++j) {
      float s = 0.0f;
      for (int d = 0; d < D; ++d) s += (x[(i + 1) * D + d] - x[i * D + d]) * (y[(j + 1) * D + d] - y[j * D + d]);
      A[i * P + j] = s * scale;
    }
  // Forward, row by row.
  for (int q = 0; q <= n2; ++q) K[q] = 1.0f;
  for (int p = 1; p <= n1; ++p) {
    const int crow = ((p - 1) >> DYADIC) * P;
    K[p * W] = 1.0f;
    for (int q = 1; q <= n2; ++q) {
      const float a = A[crow + ((q - 1) >> DYADIC)], sq = a * a * twelfth;
      K[p * W + q] = (K[p * W + q - 1] + K[(p - 1) * W + q]) * (1.0f + a * 0.5f + sq) - K[(p - 1) * W + q - 1] * (1.0f - sq);
    }
  }
  for (int e = 0; e < L1 * D; ++e) gx[e] = 0.0f;
  for (int e = 0; e < L2 * D; ++e) gy[e] = 0.0f;
  for (int q = 0; q <= W; ++q) cur[q] = next[q] = 0.0f;
  for (int j = 0; j < C2; ++j) gar[j] = 0.0f;
  // Adjoint, rows from the last; c1 and c2 of a zero-padded a are 1, but they multiply zeros.
  const float seed = GK[b];
  for (int p = n1; p >= 1; --p) {
    const int own = ((p - 1) >> DYADIC) * P, below = (p >> DYADIC) * P;
    for (int q = n2; q >= 1; --q) {
      const float ar = A[own + (q >> DYADIC)], ad = A[below + ((q - 1) >> DYADIC)], ag = A[below + (q >> DYADIC)];
      const float lam = (p == n1 && q == n2 ? seed : 0.0f) + cur[q + 1] * (1.0f + ar * 0.5f + ar * ar * twelfth) +
                        next[q] * (1.0f + ad * 0.5f + ad * ad * twelfth) - next[q + 1] * (1.0f - ag * ag * twelfth);
      cur[q] = lam;
      const float a = A[own + ((q - 1) >> DYADIC)];
      gar[(q - 1) >> DYADIC] += lam * ((K[p * W + q - 1] + K[(p - 1) * W + q]) * (0.5f + a * sixth) + K[(p - 1) * W + q - 1] * (a * sixth));
    }
    __global T* t = cur;
    cur = next, next = t;
    if (((p - 1) & fine) == 0) {  // coarse row ci is done: into its increments and points
      const int ci = (p - 1) >> DYADIC;
      for (int j = 0; j < C2; ++j) {
        const float g = gar[j] * scale;
        gar[j] = 0.0f;
        for (int d = 0; d < D; ++d) {
          const float dx = x[(ci + 1) * D + d] - x[ci * D + d], dy = y[(j + 1) * D + d] - y[j * D + d];
          gx[(ci + 1) * D + d] += g * dy, gx[ci * D + d] -= g * dy;
          gy[(j + 1) * D + d] += g * dx, gy[j * D + d] -= g * dx;
        }
      }
    }
  }
}
