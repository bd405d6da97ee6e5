// sigkernel for the cpu backend: the Gram matrix K (B1,B2) of the signature kernel between the
// paths X (B1,L1,D) and Y (B2,L2,D), by the explicit scheme of its Goursat PDE on the grid of
// increments refined 2^DYADIC times (kernels/signature/README.md):
//   K[i+1][j+1] = (K[i+1][j] + K[i][j+1]) c1 - K[i][j] c2,   K = 1 on the first row and column,
//   a = <Δx, Δy> / 4^DYADIC of the cell's coarse increments, c1 = 1 + a/2 + a²/12, c2 = 1 - a²/12
//
// A block pairs one path x with VB vectors of KF_VW paths y, one y path per SIMD lane: the
// scheme is the same for every pair, so the lanes run it in lockstep, and the VB vectors are
// independent chains that hide each other's latency (each cell waits for its left neighbour).
// The grid is swept row by row, one row of K per lane kept (n2+1 vectors); a coarse row's
// coefficients c1, c2 are computed once (their inner products over D) and serve its 2^DYADIC
// fine rows. Lanes past B2 carry zero increments and are not written.
//
// Parameters (all #defines):
//   VW  SIMD width in floats (0: the widest the compiler targets; 8: AVX2, 16: AVX-512)
//   VB  vectors of y paths per chunk (independent dependency chains)
// A block takes 16 VB y paths whatever the width (the grid does not depend on VW), in
// 16 / KF_VW chunks of VB vectors.
#ifndef VB
#define VB 2
#endif
#include "kernels/common/scratch.hpp"

typedef kf_storage T;  // fp32
typedef kf_vf vf;

// Per-thread scratch of whole vectors.
static vf* scratch_vectors(long long vectors) { return static_cast<vf*>(scratch(0, vectors * (long long)sizeof(vf))); }

static void sigkernel_chunk(const kf_ctx& c, long long b0, const T* X, const T* Y, T* K, int B1, int B2, int L1,
                            int L2, int D, int DYADIC) {
  const long long a = c.block_idx.y;
  const int C2 = L2 - 1, n1 = (L1 - 1) << DYADIC, n2 = (L2 - 1) << DYADIC, fine = (1 << DYADIC) - 1;
  const float scale = 1.0f / (float)(1 << (2 * DYADIC));  // exact: a power of two
  const float twelfth = 1.0f / 12.0f;
  vf* dy = scratch_vectors((long long)C2 * D * VB + 2LL * C2 * VB + (long long)(n2 + 1) * VB);  // (C2,D,VB)
  vf* c1 = dy + (long long)C2 * D * VB;  // (C2,VB)
  vf* c2 = c1 + (long long)C2 * VB;      // (C2,VB)
  vf* row = c2 + (long long)C2 * VB;     // (n2+1,VB): K's current row for every lane
  for (int v = 0; v < VB; ++v)
    for (int l = 0; l < KF_VW; ++l) {
      const long long b = b0 + v * KF_VW + l;
      const T* y = Y + b * L2 * D;
      for (int j = 0; j < C2; ++j)
        for (int d = 0; d < D; ++d) dy[((long long)j * D + d) * VB + v][l] = b < B2 ? y[(j + 1) * D + d] - y[j * D + d] : 0.0f;
    }
  for (long long q = 0; q <= n2; ++q)
    for (int v = 0; v < VB; ++v) row[q * VB + v] = kf_splat(1.0f);
  const T* x = X + a * L1 * D;
  float* dx = (float*)__builtin_alloca(sizeof(float) * D);
  for (int i = 0; i < n1; ++i) {
    if ((i & fine) == 0) {  // a new coarse row: its increments' coefficients
      const int ci = i >> DYADIC;
      for (int d = 0; d < D; ++d) dx[d] = x[(ci + 1) * D + d] - x[ci * D + d];
      for (int j = 0; j < C2; ++j)
        for (int v = 0; v < VB; ++v) {
          vf s = kf_splat(0.0f);
          for (int d = 0; d < D; ++d) s += dx[d] * dy[((long long)j * D + d) * VB + v];
          const vf aa = s * scale, sq = aa * aa * twelfth;
          c1[j * VB + v] = 1.0f + aa * 0.5f + sq;
          c2[j * VB + v] = 1.0f - sq;
        }
    }
    vf kl[VB], kd[VB];  // K[i+1][q-1] and K[i][q-1]
    for (int v = 0; v < VB; ++v) kl[v] = kf_splat(1.0f), kd[v] = row[v];
    for (int q = 1; q <= n2; ++q) {
      const long long j = (q - 1) >> DYADIC;
#pragma GCC unroll 8
      for (int v = 0; v < VB; ++v) {
        const vf ku = row[(long long)q * VB + v];
        const vf kn = (kl[v] + ku) * c1[j * VB + v] - kd[v] * c2[j * VB + v];
        row[(long long)q * VB + v] = kn;
        kl[v] = kn, kd[v] = ku;
      }
    }
  }
  for (int v = 0; v < VB; ++v)
    for (int l = 0; l < KF_VW; ++l) {
      const long long b = b0 + v * KF_VW + l;
      if (b < B2) K[a * B2 + b] = row[(long long)n2 * VB + v][l];
    }
}

static void sigkernel_block(const kf_ctx& c, const T* X, const T* Y, T* K, int B1, int B2, int L1, int L2, int D,
                            int DYADIC) {
  for (long long b0 = c.block_idx.x * 16LL * VB, end = b0 + 16LL * VB; b0 < end && b0 < B2; b0 += KF_VW * VB)
    sigkernel_chunk(c, b0, X, Y, K, B1, B2, L1, L2, D, DYADIC);
}

KF_KERNEL(sigkernel, sigkernel_block)
