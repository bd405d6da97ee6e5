// sigkernel_gram_grad for the cpu backend: two batches X (B1,L1,D), Y (B2,L2,D), an upstream
// gradient G (B1,B2) on their Gram matrix, and
//   GX_a = sum_b G_ab dk(x_a, y_b)/dx_a,   GY_b = sum_a G_ab dk(x_a, y_b)/dy_b,
// k the signature kernel computed by sigkernel's explicit PDE scheme, differentiated exactly
// (sigkernel_grad.cpp's steps per pair; the mathematics in sigkernel_grad_problem.cpp and
// README.md):
//   forward   K[p][q] = (K[p][q-1] + K[p-1][q]) c1 - K[p-1][q-1] c2   (every node stored)
//   adjoint   Λ[p][q] = Λ[p][q+1] c1(p,q+1) + Λ[p+1][q] c1(p+1,q) - Λ[p+1][q+1] c2(p+1,q+1)
//   dk/da_c  += Λ[p][q] ((K[p][q-1] + K[p-1][q]) (1/2 + a/6) + K[p-1][q-1] a/6)
//
// The work split: a block owns whole output rows, so no two blocks write one row and no
// reduction crosses blocks. The first ceil(B1 / (VW VB)) blocks own GX rows: VW VB paths x_a,
// one per SIMD lane, each lane walking every y_b (broadcast to all lanes) and adding the pair's
// gradient to its own accumulator. The other blocks own GY rows the same way with the roles
// swapped (k(x, y) = k(y, x), the scheme's transpose, which computes the same roundings: the
// sums are commutative). Each pair's PDE is thus solved twice, once per side: the price of
// needing no workspace, no atomics and no grid-wide barrier (a one-pass split would leave one of
// the two sums across blocks: README.md, "Gram form").
//
// Each pair's gradient in an increment is summed over the other path's increments first, then
// added to the row's accumulator (nested sums: the problem's reduction length counts the
// chains' sum). Lanes past the batch carry zero increments and a zero weight, and are not written.
//
// Parameters (all #defines):
//   VW  SIMD width in floats (8: AVX2, 16: AVX-512; the prelude's kf_vf)
//   VB  vectors of paths per block (independent dependency chains)
#ifndef VB
#define VB 2
#endif
#include "kernels/common/scratch.hpp"

typedef kf_storage T;  // fp32
typedef kf_vf vf;
#include "kernels/common/sigkernel_sweep.hpp"  // the forward scheme and its adjoint

// Per-thread scratch of whole vectors.
static vf* scratch_vectors(long long vectors) { return static_cast<vf*>(scratch(0, vectors * (long long)sizeof(vf))); }

// One side: the gradient in the first paths P (Bp,Lp,D) of sum_{p,q} w_pq k(p, q), q over the
// other paths Q (Bq,Lq,D), w_pq = G[p gp + q gq]; this block's paths p0 .. p0 + VW VB - 1.
static void gram_side(long long p0, const T* P, const T* Q, const T* G, long long gp, long long gq, T* GP, int Bp,
                      int Bq, int Lp, int Lq, int D, int DYADIC) {
  const int C1 = Lp - 1, C2 = Lq - 1, n1 = C1 << DYADIC, n2 = C2 << DYADIC;
  const long long W = n2 + 1, R = C2 + 1;  // K's row length; the coefficients' row length (padded)
  const float scale = 1.0f / (float)(1 << (2 * DYADIC));  // exact: a power of two
  const float twelfth = 1.0f / 12.0f;
  const long long ncoef = (long long)(C1 + 1) * R * VB, nd = (long long)C1 * D * VB;
  vf* dp = scratch_vectors(nd + (long long)C2 * D + 4 * ncoef + (n1 + 1) * W * VB + 2 * (W + 1) * VB + nd);
  vf* dq = dp + nd;                        // (C2,D): the other path's increments, splat
  vf* A = dq + (long long)C2 * D;          // (C1+1,C2+1,VB): a per coarse cell, zero padding
  vf* c1 = A + ncoef;
  vf* c2 = c1 + ncoef;
  vf* ga = c2 + ncoef;                     // dk/da per coarse cell
  vf* K = ga + ncoef;                      // (n1+1,n2+1,VB)
  vf* cur = K + (n1 + 1) * W * VB;         // Λ's row p, (n2+2,VB)
  vf* next = cur + (W + 1) * VB;           // Λ's row p+1
  vf* gdp = next + (W + 1) * VB;           // (C1,D,VB): the rows' gradients in their increments
  for (int v = 0; v < VB; ++v)
    for (int l = 0; l < KF_VW; ++l) {
      const long long p = p0 + v * KF_VW + l;
      for (int i = 0; i < C1; ++i)
        for (int d = 0; d < D; ++d)
          dp[((long long)i * D + d) * VB + v][l] = p < Bp ? P[(p * Lp + i + 1) * D + d] - P[(p * Lp + i) * D + d] : 0.0f;
    }
  for (long long e = 0; e < nd; ++e) gdp[e] = kf_splat(0.0f);
  for (long long e = 0; e < ncoef; ++e) A[e] = c1[e] = c2[e] = kf_splat(0.0f);
  for (int q = 0; q < Bq; ++q) {
    vf gk[VB];
    for (int v = 0; v < VB; ++v)
      for (int l = 0; l < KF_VW; ++l) {
        const long long p = p0 + v * KF_VW + l;
        gk[v][l] = p < Bp ? G[p * gp + q * gq] : 0.0f;
      }
    for (int j = 0; j < C2; ++j)
      for (int d = 0; d < D; ++d) dq[(long long)j * D + d] = kf_splat(Q[((long long)q * Lq + j + 1) * D + d] - Q[((long long)q * Lq + j) * D + d]);
    for (int i = 0; i < C1; ++i)
      for (int j = 0; j < C2; ++j)
        for (int v = 0; v < VB; ++v) {
          vf s = kf_splat(0.0f);
          for (int d = 0; d < D; ++d) s += dp[((long long)i * D + d) * VB + v] * dq[(long long)j * D + d];
          const vf aa = s * scale, sq = aa * aa * twelfth;
          const long long e = ((long long)i * R + j) * VB + v;
          A[e] = aa, c1[e] = 1.0f + aa * 0.5f + sq, c2[e] = 1.0f - sq;
        }
    for (long long e = 0; e < ncoef; ++e) ga[e] = kf_splat(0.0f);
    sigkernel_sweep(A, c1, c2, ga, K, cur, next, gk, n1, n2, R, DYADIC);
    // This pair's dk/dΔp_i = sum_j dk/da_ij Δq_j / 4^λ, summed over j first, then added.
    for (int i = 0; i < C1; ++i)
      for (int d = 0; d < D; ++d)
        for (int v = 0; v < VB; ++v) {
          vf s = kf_splat(0.0f);
          for (int j = 0; j < C2; ++j) s += ga[((long long)i * R + j) * VB + v] * dq[(long long)j * D + d];
          gdp[((long long)i * D + d) * VB + v] += s * scale;
        }
  }
  // Each increment adds to its end point and subtracts from its start.
  for (int v = 0; v < VB; ++v)
    for (int l = 0; l < KF_VW; ++l) {
      const long long p = p0 + v * KF_VW + l;
      if (p >= Bp) continue;
      for (int t = 0; t < Lp; ++t)
        for (int d = 0; d < D; ++d)
          GP[(p * Lp + t) * D + d] = (t > 0 ? gdp[((long long)(t - 1) * D + d) * VB + v][l] : 0.0f) -
                                     (t < C1 ? gdp[((long long)t * D + d) * VB + v][l] : 0.0f);
    }
}

static void sigkernel_gram_grad_block(const kf_ctx& c, const T* X, const T* Y, const T* G, T* GX, T* GY, int B1, int B2,
                                      int L1, int L2, int D, int DYADIC) {
  const long long per = KF_VW * VB, nx = (B1 + per - 1) / per, blk = c.block_idx.x;
  if (blk < nx)
    gram_side(blk * per, X, Y, G, B2, 1, GX, B1, B2, L1, L2, D, DYADIC);  // GX rows: w_ab = G[a B2 + b]
  else
    gram_side((blk - nx) * per, Y, X, G, 1, B2, GY, B2, B1, L2, L1, D, DYADIC);  // GY rows: w_ba = G[a B2 + b]
}

KF_KERNEL(sigkernel_gram_grad, sigkernel_gram_grad_block)
