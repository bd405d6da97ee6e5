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
// Parameters (all #defines):
//   PATHS  paths per block (a block is the pool's unit of work: several amortize its start)
#ifndef PATHS
#define PATHS 1
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

// a[p] += s[p] for p < np: the Horner step's addition, in place in R.
static inline void add_prefixes(float* __restrict__ a, const float* __restrict__ s, long long np) {
  for (long long p = 0; p < np; ++p) a[p] += s[p];
}

// R_m from A = S^m + R_(m-1) (in r[0..np)): r[i*np + p] = A[p] * d[i], i = 0 last (in place).
static inline void expand(float* __restrict__ r, const float* __restrict__ d, long long np, int D) {
  for (int i = D - 1; i >= 1; --i) {
    float* __restrict__ o = r + i * np;
    const float di = d[i];
    for (long long p = 0; p < np; ++p) o[p] = r[p] * di;
  }
  for (long long p = 0; p < np; ++p) r[p] *= d[0];
}

// The last step: sk[i*np + p] += A[p] * d[i].
static inline void accumulate(float* __restrict__ sk, const float* __restrict__ a, const float* __restrict__ d,
                              long long np, int D) {
  for (int i = 0; i < D; ++i) {
    float* __restrict__ o = sk + i * np;
    const float di = d[i];
    for (long long p = 0; p < np; ++p) o[p] += a[p] * di;
  }
}

// Level k of the internal buffer (i1 fastest) into the output (ik fastest): an odometer over
// the output's digits keeps the internal index in step.
static void write_level(T* __restrict__ out, const float* __restrict__ in, int k, int D) {
  int digit[8] = {0};
  long long stride[8];  // the internal stride of the output's j-th digit from the right: D^(k-1-j)
  stride[k - 1] = 1;
  for (int j = k - 2; j >= 0; --j) stride[j] = stride[j + 1] * D;
  const long long n = stride[0] * D;
  long long at = 0;  // internal index of output element e
  for (long long e = 0; e < n; ++e) {
    out[e] = in[at];
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

static void signature_block(const kf_ctx& c, const T* X, T* SIG, int B, int L, int D, int LEVEL) {
  long long off[8] = {0, 0}, size[8] = {1};
  for (int k = 1; k <= LEVEL; ++k) size[k] = size[k - 1] * D, off[k + 1] = off[k] + size[k];
  const long long siglen = off[LEVEL + 1], rlen = size[LEVEL - 1] > D ? size[LEVEL - 1] : D;
  // S (siglen, internal order), R (rlen), dm[(m-1)*D + i] = Δ_i / m for m = 1..LEVEL; each
  // 64-byte aligned.
  const long long s_len = (siglen + 15) & ~15LL, r_len = (rlen + 15) & ~15LL;
  float* S = scratch(s_len + r_len + (long long)D * LEVEL);
  float* R = S + s_len;
  float* dm = R + r_len;
  const long long b0 = (long long)c.block_idx.x * PATHS;
  for (long long b = b0; b < b0 + PATHS && b < B; ++b) {
    std::memset(S, 0, sizeof(float) * siglen);
    const T* x = X + b * L * D;
    for (int t = 0; t + 1 < L; ++t, x += D) {
      for (int i = 0; i < D; ++i) {
        const float delta = x[D + i] - x[i];
        for (int m = 1; m <= LEVEL; ++m) dm[(m - 1) * D + i] = m == 1 ? delta : delta / (float)m;
      }
      for (int k = LEVEL; k >= 2; --k) {
        std::memcpy(R, dm + (long long)(k - 1) * D, sizeof(float) * D);  // R_0 = Δ/k
        for (int m = 1; m <= k - 2; ++m) {
          add_prefixes(R, S + off[m], size[m]);
          expand(R, dm + (long long)(k - m - 1) * D, size[m], D);
        }
        add_prefixes(R, S + off[k - 1], size[k - 1]);
        accumulate(S + off[k], R, dm, size[k - 1], D);
      }
      for (int i = 0; i < D; ++i) S[i] += dm[i];
    }
    for (int k = 1; k <= LEVEL; ++k) write_level(SIG + b * siglen + off[k], S + off[k], k, D);
  }
}

KF_KERNEL(signature, signature_block)
