#pragma once
// The signature kernel's PDE on one grid, forward then adjoint, for VB vectors of pairs (one pair
// per SIMD lane), shared by the cpu kernels sigkernel_grad.cpp (B pairs) and
// sigkernel_gram_grad.cpp (every pair of two batches). The mathematics is in
// kernels/signature/README.md ("Kernel gradient"):
//   forward   K[p][q] = (K[p][q-1] + K[p-1][q]) c1 - K[p-1][q-1] c2   (every node stored)
//   adjoint   Λ[p][q] = Λ[p][q+1] c1(p,q+1) + Λ[p+1][q] c1(p+1,q) - Λ[p+1][q+1] c2(p+1,q+1)
//   dk/da_c  += Λ[p][q] ((K[p][q-1] + K[p-1][q]) (1/2 + a/6) + K[p-1][q-1] a/6)
// with c(p,q) the coefficients of the coarse cell below-left of node (p,q). Needs `vf` (the
// prelude's kf_vf) and VB.
//
// Grid n1 x n2 nodes past the boundary; coarse cells in rows of R (>= n2 >> DYADIC, + 1 of zero
// padding past the grid, where the adjoint's neighbours are zero): A, c1, c2, ga (dk/da, added
// to) are (rows, R, VB); K is (n1+1, n2+1, VB); cur and next are two rows of Λ, (n2+2, VB); gk
// the seed (the upstream gradient of each lane's k).
static inline void sigkernel_sweep(const vf* A, const vf* c1, const vf* c2, vf* ga, vf* K, vf* cur, vf* next,
                                   const vf* gk, int n1, int n2, long long R, int DYADIC) {
  const long long W = n2 + 1;  // K's row length
  const float sixth = 1.0f / 6.0f;
  // Forward, row by row; node (p,q) uses cell ((p-1)>>λ, (q-1)>>λ).
  for (long long q = 0; q <= n2; ++q)
    for (int v = 0; v < VB; ++v) K[q * VB + v] = kf_splat(1.0f);
  for (int p = 1; p <= n1; ++p) {
    const vf* up = K + (long long)(p - 1) * W * VB;
    vf* row = K + (long long)p * W * VB;
    const long long crow = (long long)((p - 1) >> DYADIC) * R;
    for (int v = 0; v < VB; ++v) row[v] = kf_splat(1.0f);
    for (int q = 1; q <= n2; ++q) {
      const long long e = (crow + ((q - 1) >> DYADIC)) * VB;
#pragma GCC unroll 8
      for (int v = 0; v < VB; ++v)
        row[(long long)q * VB + v] = (row[(long long)(q - 1) * VB + v] + up[(long long)q * VB + v]) * c1[e + v] -
                                     up[(long long)(q - 1) * VB + v] * c2[e + v];
    }
  }
  // Adjoint, rows from the last; Λ is zero past the grid (next = 0 for p = n1, and column n2+1),
  // where the padded coefficients are zero too. Each node's Λ adds its term to dk/da.
  for (long long q = 0; q <= W; ++q)
    for (int v = 0; v < VB; ++v) cur[q * VB + v] = next[q * VB + v] = kf_splat(0.0f);
  for (int p = n1; p >= 1; --p) {
    const vf* kr = K + (long long)p * W * VB;
    const vf* ku = K + (long long)(p - 1) * W * VB;
    const long long own = (long long)((p - 1) >> DYADIC) * R, below = (long long)(p >> DYADIC) * R;
    for (int q = n2; q >= 1; --q) {
      const long long e_right = (own + (q >> DYADIC)) * VB;          // c1(p, q+1)
      const long long e_down = (below + ((q - 1) >> DYADIC)) * VB;   // c1(p+1, q)
      const long long e_diag = (below + (q >> DYADIC)) * VB;         // c2(p+1, q+1)
      const long long e_own = (own + ((q - 1) >> DYADIC)) * VB;      // a of node (p,q)'s cell
      const bool seed = p == n1 && q == n2;
#pragma GCC unroll 8
      for (int v = 0; v < VB; ++v) {
        const vf lam = (seed ? gk[v] : kf_splat(0.0f)) + cur[(long long)(q + 1) * VB + v] * c1[e_right + v] +
                       next[(long long)q * VB + v] * c1[e_down + v] - next[(long long)(q + 1) * VB + v] * c2[e_diag + v];
        cur[(long long)q * VB + v] = lam;
        const vf a = A[e_own + v];
        const vf t = (kr[(long long)(q - 1) * VB + v] + ku[(long long)q * VB + v]) * (0.5f + a * sixth) +
                     ku[(long long)(q - 1) * VB + v] * (a * sixth);
        ga[e_own + v] += lam * t;
      }
    }
    vf* s = cur;
    cur = next, next = s;
  }
}
