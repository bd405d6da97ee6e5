// sigkernel_grad for the cpu backend: for B pairs (x_b, y_b) and an upstream gradient GK (B),
// GX = d/dX sum_b GK_b k(x_b, y_b) and GY = d/dY (same), k the signature kernel computed by
// sigkernel's explicit PDE scheme, differentiated exactly (the mathematics in
// sigkernel_grad_problem.cpp and README.md):
//   forward   K[p][q] = (K[p][q-1] + K[p-1][q]) c1 - K[p-1][q-1] c2   (every node stored)
//   adjoint   Λ[p][q] = Λ[p][q+1] c1(p,q+1) + Λ[p+1][q] c1(p+1,q) - Λ[p+1][q+1] c2(p+1,q+1)
//   dk/da_c  += Λ[p][q] ((K[p][q-1] + K[p-1][q]) (1/2 + a/6) + K[p-1][q-1] a/6)
// with c(p,q) the coefficients of the coarse cell below-left of node (p,q), then a_c =
// <Δx_ci, Δy_cj> / 4^DYADIC into the increments and the points.
//
// A block runs VB vectors of KF_VW pairs, one pair per SIMD lane (the scheme is the same for
// every pair: the lanes run it in lockstep); the VB vectors are independent dependency chains
// (each node waits for its neighbour along the row). The whole grid of K is kept per lane
// ((n1+1)(n2+1) floats, the problem caps it at 2^20 nodes); the adjoint keeps two rows.
// Lanes past B carry zero increments and a zero GK and are not written.
//
// Parameters (all #defines):
//   VW  SIMD width in floats (0: the widest the compiler targets; 8: AVX2, 16: AVX-512)
//   VB  vectors of pairs per chunk (independent dependency chains)
// A block takes 16 VB pairs whatever the width (the grid does not depend on VW), in
// 16 / KF_VW chunks of VB vectors.
#ifndef VB
#define VB 2
#endif
#include "kernels/common/scratch.hpp"

typedef kf_storage T;  // fp32
typedef kf_vf vf;
#include "kernels/common/sigkernel_sweep.hpp"  // the forward scheme and its adjoint

// Per-thread scratch of whole vectors.
static vf* scratch_vectors(long long vectors) { return static_cast<vf*>(scratch(0, vectors * (long long)sizeof(vf))); }

static void sigkernel_grad_chunk(const kf_ctx& c, long long b0, const T* X, const T* Y, const T* GK, T* GX, T* GY,
                                 int B, int L1, int L2, int D, int DYADIC) {
  const int C1 = L1 - 1, C2 = L2 - 1, n1 = C1 << DYADIC, n2 = C2 << DYADIC;
  const long long W = n2 + 1, P = C2 + 1;  // K's row length; the coefficients' row length (padded)
  const float scale = 1.0f / (float)(1 << (2 * DYADIC));  // exact: a power of two
  const float twelfth = 1.0f / 12.0f;
  const long long ncoef = (long long)(C1 + 1) * P * VB;
  vf* dx = scratch_vectors((long long)(C1 + C2) * D * VB + 4 * ncoef + (n1 + 1) * W * VB + 2 * (W + 1) * VB +
                   (long long)(C1 + C2) * D * VB);
  vf* dy = dx + (long long)C1 * D * VB;  // (C2,D,VB)
  vf* A = dy + (long long)C2 * D * VB;   // (C1+1,C2+1,VB): a per coarse cell, zero padding
  vf* c1 = A + ncoef;
  vf* c2 = c1 + ncoef;
  vf* ga = c2 + ncoef;                      // dk/da per coarse cell
  vf* K = ga + ncoef;                       // (n1+1,n2+1,VB)
  vf* cur = K + (n1 + 1) * W * VB;          // Λ's row p, (n2+2,VB)
  vf* next = cur + (W + 1) * VB;            // Λ's row p+1
  vf* gdx = next + (W + 1) * VB;            // (C1,D,VB)
  vf* gdy = gdx + (long long)C1 * D * VB;   // (C2,D,VB)
  vf gk[VB];
  for (int v = 0; v < VB; ++v)
    for (int l = 0; l < KF_VW; ++l) {
      const long long b = b0 + v * KF_VW + l;
      const bool live = b < B;
      gk[v][l] = live ? GK[b] : 0.0f;
      for (int i = 0; i < C1; ++i)
        for (int d = 0; d < D; ++d) dx[((long long)i * D + d) * VB + v][l] = live ? X[(b * L1 + i + 1) * D + d] - X[(b * L1 + i) * D + d] : 0.0f;
      for (int j = 0; j < C2; ++j)
        for (int d = 0; d < D; ++d) dy[((long long)j * D + d) * VB + v][l] = live ? Y[(b * L2 + j + 1) * D + d] - Y[(b * L2 + j) * D + d] : 0.0f;
    }
  for (long long e = 0; e < ncoef; ++e) A[e] = c1[e] = c2[e] = ga[e] = kf_splat(0.0f);
  for (int i = 0; i < C1; ++i)
    for (int j = 0; j < C2; ++j)
      for (int v = 0; v < VB; ++v) {
        vf s = kf_splat(0.0f);
        for (int d = 0; d < D; ++d) s += dx[((long long)i * D + d) * VB + v] * dy[((long long)j * D + d) * VB + v];
        const vf aa = s * scale, sq = aa * aa * twelfth;
        const long long e = ((long long)i * P + j) * VB + v;
        A[e] = aa, c1[e] = 1.0f + aa * 0.5f + sq, c2[e] = 1.0f - sq;
      }
  sigkernel_sweep(A, c1, c2, ga, K, cur, next, gk, n1, n2, P, DYADIC);
  // dk/da into the increments: dk/dΔx_i = sum_j dk/da_ij Δy_j / 4^λ, and Δy likewise.
  for (long long e = 0; e < (long long)(C1 + C2) * D * VB; ++e) gdx[e] = kf_splat(0.0f);
  for (int i = 0; i < C1; ++i)
    for (int j = 0; j < C2; ++j)
      for (int v = 0; v < VB; ++v) {
        const vf g = ga[((long long)i * P + j) * VB + v] * scale;
        for (int d = 0; d < D; ++d) {
          gdx[((long long)i * D + d) * VB + v] += g * dy[((long long)j * D + d) * VB + v];
          gdy[((long long)j * D + d) * VB + v] += g * dx[((long long)i * D + d) * VB + v];
        }
      }
  // Each increment adds to its end point and subtracts from its start.
  for (int v = 0; v < VB; ++v)
    for (int l = 0; l < KF_VW; ++l) {
      const long long b = b0 + v * KF_VW + l;
      if (b >= B) continue;
      for (int t = 0; t < L1; ++t)
        for (int d = 0; d < D; ++d)
          GX[(b * L1 + t) * D + d] = (t > 0 ? gdx[((long long)(t - 1) * D + d) * VB + v][l] : 0.0f) -
                                     (t < C1 ? gdx[((long long)t * D + d) * VB + v][l] : 0.0f);
      for (int t = 0; t < L2; ++t)
        for (int d = 0; d < D; ++d)
          GY[(b * L2 + t) * D + d] = (t > 0 ? gdy[((long long)(t - 1) * D + d) * VB + v][l] : 0.0f) -
                                     (t < C2 ? gdy[((long long)t * D + d) * VB + v][l] : 0.0f);
    }
}

static void sigkernel_grad_block(const kf_ctx& c, const T* X, const T* Y, const T* GK, T* GX, T* GY, T* /*W*/, int B,
                                 int L1, int L2, int D, int DYADIC) {
  for (long long b0 = c.block_idx.x * 16LL * VB, end = b0 + 16LL * VB; b0 < end && b0 < B; b0 += KF_VW * VB)
    sigkernel_grad_chunk(c, b0, X, Y, GK, GX, GY, B, L1, L2, D, DYADIC);
}

KF_KERNEL(sigkernel_grad, sigkernel_grad_block)
