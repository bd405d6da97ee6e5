// signature_grad for the cpu backend: GX (B,L,D) = d <GS, signature(X)> / dX, the mathematics
// in grad_problem.cpp. Per path: the forward pass to the whole signature S, then the segments
// backwards, recovering each prefix A = S_(t-1) in place as S_t ⊗ exp(-Δ) instead of storing it,
// and the adjoint of S_t = A ⊗ exp(Δ) into adj A and Δ. Both products with exp(±Δ) run by
// Horner's rule over the word's prefixes (kernels/common/signature_chen.hpp, as signature.cpp),
// and the adjoint is that Horner recurrence's own transpose, so it shares the prefixes' work too.
//
// The adjoint. Level k of C = A ⊗ exp(Δ) is, by Horner (T_0 = 1):
//   T_m = A^m + T_(m-1) ⊗ Δ/(k-m+1)  (m = 1..k-1),   C^k = A^k + T_(k-1) ⊗ Δ
// Its transpose, from Q = adj C^k down the chain, m = k-1 .. 0 (c = Δ/(k-m)):
//   adj Δ_i += (1/(k-m)) sum_u Q[u i] T_m[u]      (the product's other factor)
//   Q'[u]    = sum_i Q[u i] c_i                    (adj T_m: contract the last letter)
//   adj A^m += Q', Q = Q'                          (m >= 1)
// and adj A^k += adj C^k. About 2 D^k multiply-adds per level, plus the T chain's recomputation
// (D^(k-1) + ...), where the general product's adjoint costs 2 (k+1) D^k. Levels go up (k = 1..N)
// so adj S is updated in place: level k's old adjoint is read before any higher level adds to
// the lower ones it has already passed.
//
// Layout: the buffers keep the signature's internal order (first letter fastest), so appending
// the last letter i is the block i*np and every loop above is D contiguous runs over the np
// prefixes (vectorized whatever D is); GS is read in it by a digit-reversing copy.
//
// BATCHED = 1 runs KF_VW paths at once, one per SIMD lane (each element a kf_vf; lanes past B
// carry a zero path and a zero GS): every step is a vector operation on KF_VW paths, which
// fills the vectors at short levels where the runs are a few elements long, and each path's
// runs stay as long as they were. Its buffers are KF_VW times larger (about 3 siglen vectors),
// so large D^LEVEL keep BATCHED = 0 (signature_grad_large_cpu.json). The buffers are per thread
// (kernels/common/scratch.hpp), cache-resident and reused across blocks; the problem's
// workspace W is for the GPU kernels.
//
// Parameters (all #defines):
//   PATHS    paths per block; BATCHED: 8 PATHS paths per block (whatever the width, so that the
//            grid does not depend on it), rounded up to whole vectors of KF_VW paths
//   BATCHED  1: one path per SIMD lane; 0: one path at a time
//   VW       SIMD width in floats when BATCHED; 0: the widest the compiler targets (8 on AVX2,
//            16 on AVX-512: wider than the registers, a kf_vf is passed through memory)
#ifndef PATHS
#define PATHS 1
#endif
#ifndef BATCHED
#define BATCHED 0
#endif
#include <cstring>

#include "kernels/common/scratch.hpp"
#include "kernels/common/signature_chen.hpp"

typedef kf_storage T;  // fp32

// sum_u q[u] t[u]: two accumulators (the sum is a dependency chain; one path per lane).
static inline kf_vf dot(const kf_vf* __restrict__ q, const kf_vf* __restrict__ t, long long n) {
  kf_vf a0 = {}, a1 = {};
  long long u = 0;
  for (; u + 1 < n; u += 2) a0 += q[u] * t[u], a1 += q[u + 1] * t[u + 1];
  if (u < n) a0 += q[u] * t[u];
  return a0 + a1;
}

// One path: a float reduction does not vectorize by itself (no reassociation), so in kf_vf
// chunks, the tail scalar.
static inline float dot(const float* __restrict__ q, const float* __restrict__ t, long long n) {
  typedef float vu __attribute__((vector_size(KF_VW * 4), aligned(4)));
  kf_vf a0 = {}, a1 = {};
  long long u = 0;
  for (; u + 2 * KF_VW <= n; u += 2 * KF_VW)
    a0 += *(const vu*)(q + u) * *(const vu*)(t + u), a1 += *(const vu*)(q + u + KF_VW) * *(const vu*)(t + u + KF_VW);
  for (; u + KF_VW <= n; u += KF_VW) a0 += *(const vu*)(q + u) * *(const vu*)(t + u);
  a0 += a1;
  float s = 0.0f;
  for (int l = 0; l < KF_VW; ++l) s += a0[l];
  for (; u < n; ++u) s += q[u] * t[u];
  return s;
}

// The T chain of level k (k >= 2) from the prefix A (internal order, levels 1..k-1 used):
// T_1 = A^1 + Δ/k, T_m[i*np + u] = A^m[i*np + u] + T_(m-1)[u] Δ_i/(k-m+1), np = D^(m-1).
template <class E>
static void t_chain(E* __restrict__ TT, const E* __restrict__ A, const E* dm, const long long* off,
                    const long long* size, int D, int k) {
  for (int i = 0; i < D; ++i) TT[i] = A[i] + dm[(long long)(k - 1) * D + i];
  for (int m = 2; m < k; ++m) {
    const long long np = size[m - 1];
    const E* c = dm + (long long)(k - m) * D;
    const E* prev = TT + off[m - 1];
    for (int i = 0; i < D; ++i) {
      E* __restrict__ o = TT + off[m] + i * np;
      const E* __restrict__ a = A + off[m] + i * np;
      const E ci = c[i];
      for (long long u = 0; u < np; ++u) o[u] = a[u] + prev[u] * ci;
    }
  }
}

// The adjoint of one segment: G (adj S_t on entry, adj S_(t-1) on return, in place) and
// gd (adj Δ, set) from the prefix A = S_(t-1).
template <class E>
static void segment_adjoint(E* G, E* gd, const E* A, E* TT, E* Q0, E* Q1, const E* dm, const float* inv,
                            const long long* off, const long long* size, int D, int LEVEL) {
  for (int i = 0; i < D; ++i) gd[i] = E{};
  for (int k = 1; k <= LEVEL; ++k) {
    if (k >= 2) t_chain(TT, A, dm, off, size, D, k);
    const E* Q = G + off[k];  // adj C^k: this level's old adjoint, read before anything adds to it
    E* next = Q0;
    for (int m = k - 1; m >= 0; --m) {
      const long long np = size[m];
      const E* c = dm + (long long)(k - m - 1) * D;  // Δ/(k-m)
      const float w = inv[k - m];
      if (m == 0) {
        for (int i = 0; i < D; ++i) gd[i] += Q[i] * w;  // T_0 = 1
        break;
      }
      const E* __restrict__ t = TT + off[m];
      E* __restrict__ q = next;
      if constexpr (sizeof(E) == sizeof(float)) {  // one path: the dot in vector chunks, apart
        for (int i = 0; i < D; ++i) gd[i] += dot(Q + i * np, t, np) * w;
        for (long long u = 0; u < np; ++u) q[u] = Q[u] * c[0];
        for (int i = 1; i < D; ++i) {
          const E* __restrict__ qi = Q + i * np;
          const E ci = c[i];
          for (long long u = 0; u < np; ++u) q[u] += qi[u] * ci;
        }
      } else {  // one path per lane: both uses of Q in one pass over it
        for (int i = 0; i < D; ++i) {
          const E* __restrict__ qi = Q + i * np;
          const E ci = c[i];
          E a0 = {}, a1 = {};
          long long u = 0;
          if (i == 0)
            for (; u + 1 < np; u += 2)
              q[u] = qi[u] * ci, q[u + 1] = qi[u + 1] * ci, a0 += qi[u] * t[u], a1 += qi[u + 1] * t[u + 1];
          else
            for (; u + 1 < np; u += 2)
              q[u] += qi[u] * ci, q[u + 1] += qi[u + 1] * ci, a0 += qi[u] * t[u], a1 += qi[u + 1] * t[u + 1];
          if (u < np) q[u] = (i == 0 ? E{} : q[u]) + qi[u] * ci, a0 += qi[u] * t[u];
          gd[i] += (a0 + a1) * w;
        }
      }
      E* __restrict__ g = G + off[m];
      for (long long u = 0; u < np; ++u) g[u] += q[u];
      Q = q;
      next = q == Q0 ? Q1 : Q0;
    }
  }
}

static void signature_grad_block(const kf_ctx& c, const T* X, const T* GS, T* GX, T* /*W*/, int B, int L, int D,
                                 int LEVEL) {
  long long off[9] = {0, 0}, size[9] = {1};
  for (int k = 1; k <= LEVEL; ++k) size[k] = size[k - 1] * D, off[k + 1] = off[k] + size[k];
  const long long siglen = off[LEVEL + 1], rlen = size[LEVEL - 1] > D ? size[LEVEL - 1] : D;
  float inv[8];
  for (int j = 1; j <= LEVEL; ++j) inv[j] = 1.0f / (float)j;
  // S, G (siglen each), TT (the T chain, siglen), R, Q0, Q1 (rlen each), dm, nm (D LEVEL: Δ/m
  // and -Δ/m), gd (D); in units of E, each a multiple of 16 of them (64-byte aligned).
  const long long s_len = (siglen + 15) & ~15LL, r_len = (rlen + 15) & ~15LL, d_len = ((long long)D * LEVEL + 15) & ~15LL;
  const long long total = 3 * s_len + 3 * r_len + 2 * d_len + ((D + 15) & ~15LL);
#if BATCHED
  typedef kf_vf E;
  E* S = (E*)scratch_floats(0, total * KF_VW);
#else
  typedef float E;
  E* S = scratch_floats(0, total);
#endif
  E *G = S + s_len, *TT = G + s_len, *R = TT + s_len, *Q0 = R + r_len, *Q1 = Q0 + r_len;
  E *dm = Q1 + r_len, *nm = dm + d_len, *gd = nm + d_len;
  const int lanes = (int)(sizeof(E) / sizeof(float));
  // A block's share of the paths from the grid (8 PATHS when batched, whatever KF_VW is),
  // rounded up to whole vectors: the blocks past the paths then have nothing to do.
  const long long share = (B + c.grid_dim.x - 1) / c.grid_dim.x;
  const long long per_block = (share + lanes - 1) / lanes * lanes;
  const long long b0 = (long long)c.block_idx.x * per_block;
  for (long long g = b0; g < b0 + per_block && g < B; g += lanes) {
    const int n = B - g < lanes ? (int)(B - g) : lanes;
    // Δ_t = x_t - x_(t-1) of every lane's path into dm and its negative into nm.
    auto increment = [&](int t) {
      for (int i = 0; i < D; ++i) {
        E delta;
#if BATCHED
        for (int l = 0; l < KF_VW; ++l) {
          const T* x = X + ((g + (l < n ? l : 0)) * L + t) * D + i;
          delta[l] = l < n ? x[0] - x[-D] : 0.0f;
        }
#else
        const T* x = X + (g * L + t) * D + i;
        delta = x[0] - x[-D];
#endif
        for (int m = 1; m <= LEVEL; ++m) {
          dm[(m - 1) * D + i] = m == 1 ? delta : delta * inv[m];
          nm[(m - 1) * D + i] = -dm[(m - 1) * D + i];
        }
      }
    };
    std::memset((void*)S, 0, sizeof(E) * siglen);
    for (int t = 1; t < L; ++t) {
      increment(t);
      chen_step(S, R, dm, off, size, D, LEVEL);
    }
    for (int k = 1; k <= LEVEL; ++k)  // GS into G, internal order; zero lanes past B
      chen_for_each_word(k, D, [&](long long e, long long at) {
#if BATCHED
        for (int l = 0; l < KF_VW; ++l) G[off[k] + at][l] = l < n ? GS[(g + l) * siglen + off[k] + e] : 0.0f;
#else
        G[off[k] + at] = GS[g * siglen + off[k] + e];
#endif
      });
    for (int l = 0; l < n; ++l)
      for (long long e = 0; e < (long long)L * D; ++e) GX[(g + l) * L * D + e] = 0.0f;
    for (int t = L - 1; t >= 1; --t) {
      increment(t);
      chen_step(S, R, nm, off, size, D, LEVEL);  // the prefix S_(t-1), in place
      segment_adjoint(G, gd, S, TT, Q0, Q1, dm, inv, off, size, D, LEVEL);
      for (int l = 0; l < n; ++l) {
        T* gx = GX + (g + l) * L * D;
        for (int i = 0; i < D; ++i) {
#if BATCHED
          const float d = gd[i][l];
#else
          const float d = gd[i];
#endif
          gx[t * D + i] += d, gx[(t - 1) * D + i] -= d;
        }
      }
    }
  }
}

KF_KERNEL(signature_grad, signature_grad_block)
