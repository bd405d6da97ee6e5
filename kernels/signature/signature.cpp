// signature for the cpu backend: SIG (B, D+...+D^LEVEL) of the paths X (B,L,D), levels
// concatenated, each level row-major: word i1..ik at i1*D^(k-1) + ... + ik (README.md).
//
// A block owns PATHS consecutive paths, one after another. A path's signature is built in a
// per-thread buffer, segment by segment (Chen's identity S <- S ⊗ exp(Δ)), levels from the top
// down, so that level k reads the lower levels while they still hold the old values. Level k is
// Horner's rule over the word's prefixes, with every prefix's work shared:
//   R_0 = Δ/k                                     (D values: prefixes of length 1)
//   R_m = (S^m + R_(m-1)) ⊗ Δ/(k-m), m < k-1      (D^(m+1) values)
//   S^k += (S^(k-1) + R_(k-2)) ⊗ Δ                 (the last step fused into the level)
// so a level-k term costs one multiply-add per segment (plus 1/D of that for its prefixes).
//
// Inside the buffer a word's letters are stored the other way round (i1 the fastest-moving
// index): then "⊗ Δ" appends the new letter as the slowest index, and every step above is D
// long contiguous axpys over all the prefixes (A ⊗ d = [d_0 A, d_1 A, ...]), which vectorize
// whatever D is; with i1 slowest they would be loops of length D. The output row is written once
// at the end in the row-major order, a digit-reversing copy.
//
// LEVEL <= 3 fuses the levels into one pass per segment without the R buffer (chen_step_small),
// where the generic steps' loops are a few vectors long (README: measured).
//
// BATCHED = 1 runs KF_VW paths at once, one per SIMD lane, every step above then a vector
// operation on KF_VW paths: for short levels (D^k small), where the axpys are a few elements
// long, this is what fills the vectors; the buffer is KF_VW times larger (siglen vectors).
//
// Parameters (all #defines):
//   PATHS    paths per block; BATCHED: 8 PATHS paths per block (whatever the width, so that the
//            grid does not depend on it), rounded up to whole vectors of KF_VW paths
//   BATCHED  1: one path per SIMD lane; 0: one path at a time
//   VW       SIMD width in floats when BATCHED; 0: the widest the compiler targets (8 on AVX2,
//            16 on AVX-512). Wider than the registers is 2.5x slower (AVX2, VW=16, loaded host).
#ifndef PATHS
#define PATHS 1
#endif
#ifndef BATCHED
#define BATCHED 0
#endif
#include <cstdlib>
#include <cstring>

typedef kf_storage T;  // fp32

static float* scratch(long long floats) {  // per thread, grown to the largest seen
  static thread_local float* buf = nullptr;
  static thread_local long long cap = 0;
  if (cap < floats) {
    std::free(buf);
    buf = static_cast<float*>(std::aligned_alloc(64, ((floats * 4 + 63) / 64) * 64));
    cap = floats;
  }
  return buf;
}

// The steps below run on E = float (one path) or E = kf_vf (BATCHED: one path per SIMD lane).
// a[p] += s[p] for p < np: the Horner step's addition, in place in R.
template <class E>
static inline void add_prefixes(E* __restrict__ a, const E* __restrict__ s, long long np) {
  for (long long p = 0; p < np; ++p) a[p] += s[p];
}

// R_m from A = S^m + R_(m-1) (in r[0..np)): r[i*np + p] = A[p] * d[i], i = 0 last (in place).
template <class E>
static inline void expand(E* __restrict__ r, const E* __restrict__ d, long long np, int D) {
  for (int i = D - 1; i >= 1; --i) {
    E* __restrict__ o = r + i * np;
    const E di = d[i];
    for (long long p = 0; p < np; ++p) o[p] = r[p] * di;
  }
  for (long long p = 0; p < np; ++p) r[p] *= d[0];
}

// The last step: sk[i*np + p] += A[p] * d[i].
template <class E>
static inline void accumulate(E* __restrict__ sk, const E* __restrict__ a, const E* __restrict__ d, long long np, int D) {
  for (int i = 0; i < D; ++i) {
    E* __restrict__ o = sk + i * np;
    const E di = d[i];
    for (long long p = 0; p < np; ++p) o[p] += a[p] * di;
  }
}

// Level k of the internal buffer (i1 fastest) into the output (ik fastest): an odometer over
// the output's digits keeps the internal index in step.
template <class Get>
static void write_level(T* __restrict__ out, Get in, int k, int D) {
  int digit[8] = {0};
  long long stride[8];  // the internal stride of the output's j-th digit from the right: D^(k-1-j)
  stride[k - 1] = 1;
  for (int j = k - 2; j >= 0; --j) stride[j] = stride[j + 1] * D;
  const long long n = stride[0] * D;
  long long at = 0;  // internal index of output element e
  for (long long e = 0; e < n; ++e) {
    out[e] = in(at);
    for (int j = 0; j < k; ++j) {  // increment the rightmost digit, carrying left
      if (++digit[j] < D) {
        at += stride[j];
        break;
      }
      digit[j] = 0;
      at -= stride[j] * (D - 1);
    }
  }
}

// One segment's update of S (levels from the top down), E as above; dm holds Δ/m.
template <class E>
static void chen_step(E* S, E* R, const E* dm, const long long* off, const long long* size, int D, int LEVEL) {
  for (int k = LEVEL; k >= 2; --k) {
    for (int i = 0; i < D; ++i) R[i] = dm[(long long)(k - 1) * D + i];  // R_0 = Δ/k
    for (int m = 1; m <= k - 2; ++m) {
      add_prefixes(R, S + off[m], size[m]);
      expand(R, dm + (long long)(k - m - 1) * D, size[m], D);
    }
    add_prefixes(R, S + off[k - 1], size[k - 1]);
    accumulate(S + off[k], R, dm, size[k - 1], D);
  }
  for (int i = 0; i < D; ++i) S[i] += dm[i];
}

// LEVEL <= 3: the same Horner steps with the levels fused into one pass per segment and no R
// buffer: a level-3 prefix (S^2 + R_1)[i j] is formed in a register and used at once.
template <class E>
static void chen_step_small(E* S, const E* dm, int D, int LEVEL) {
  E* S1 = S;
  E* S2 = S + D;
  E* S3 = S2 + D * D;
  const long long dd = (long long)D * D;
  if (LEVEL >= 3)
    for (int j = 0; j < D; ++j) {
      const E dj = dm[D + j];  // Δ_j / 2
      for (int i = 0; i < D; ++i) {
        const E a = S2[i + j * D] + (S1[i] + dm[2 * D + i]) * dj;  // R_0 = Δ/3
        E* s3 = S3 + i + j * D;
        for (int k = 0; k < D; ++k) s3[k * dd] += a * dm[k];
      }
    }
  if (LEVEL >= 2)
    for (int j = 0; j < D; ++j) {
      const E dj = dm[j];
      for (int i = 0; i < D; ++i) S2[i + j * D] += (S1[i] + dm[D + i]) * dj;
    }
  for (int i = 0; i < D; ++i) S1[i] += dm[i];
}

static void signature_block(const kf_ctx& c, const T* X, T* SIG, int B, int L, int D, int LEVEL) {
  long long off[8] = {0, 0}, size[8] = {1};
  for (int k = 1; k <= LEVEL; ++k) size[k] = size[k - 1] * D, off[k + 1] = off[k] + size[k];
  const long long siglen = off[LEVEL + 1], rlen = size[LEVEL - 1] > D ? size[LEVEL - 1] : D;
  // S (siglen, internal order), R (rlen), dm[(m-1)*D + i] = Δ_i / m for m = 1..LEVEL; in units
  // of E, each part a multiple of 16 of them (64-byte aligned).
  const long long s_len = (siglen + 15) & ~15LL, r_len = (rlen + 15) & ~15LL, d_len = (long long)D * LEVEL;
#if BATCHED
  // KF_VW paths at a time, one per SIMD lane; lanes past B carry a zero path.
  typedef kf_vf E;
  E* S = (E*)scratch((s_len + r_len + d_len) * KF_VW);
#else
  typedef float E;
  E* S = scratch(s_len + r_len + d_len);
#endif
  E* R = S + s_len;
  E* dm = R + r_len;
  const int lanes = (int)(sizeof(E) / sizeof(float));
  // A block's share of the paths from the grid (8 PATHS when batched, whatever KF_VW is),
  // rounded up to whole vectors: the blocks past the paths then have nothing to do.
  const long long share = (B + c.grid_dim.x - 1) / c.grid_dim.x;
  const long long per_block = (share + lanes - 1) / lanes * lanes;
  const long long b0 = (long long)c.block_idx.x * per_block;
  for (long long g = b0; g < b0 + per_block && g < B; g += lanes) {
    const int n = B - g < lanes ? (int)(B - g) : lanes;
    std::memset((void*)S, 0, sizeof(E) * siglen);
    for (int t = 0; t + 1 < L; ++t) {
      for (int i = 0; i < D; ++i) {
        E delta;
#if BATCHED
        for (int l = 0; l < KF_VW; ++l) {
          const T* x = X + ((g + (l < n ? l : 0)) * L + t) * D + i;
          delta[l] = l < n ? x[D] - x[0] : 0.0f;
        }
#else
        const T* x = X + (g * L + t) * D + i;
        delta = x[D] - x[0];
#endif
        for (int m = 1; m <= LEVEL; ++m) dm[(m - 1) * D + i] = m == 1 ? delta : delta / (float)m;
      }
      if (LEVEL <= 3)
        chen_step_small(S, dm, D, LEVEL);
      else
        chen_step(S, R, dm, off, size, D, LEVEL);
    }
    for (int l = 0; l < n; ++l)
      for (int k = 1; k <= LEVEL; ++k) {
        const E* level = S + off[k];
#if BATCHED
        write_level(SIG + (g + l) * siglen + off[k], [&](long long at) { return level[at][l]; }, k, D);
#else
        write_level(SIG + (g + l) * siglen + off[k], [&](long long at) { return level[at]; }, k, D);
#endif
      }
  }
}

KF_KERNEL(signature, signature_block)
