#pragma once
// Chen's identity S <- S ⊗ exp(Δ) in place, by Horner's rule over the word's prefixes, for the
// signature family's cpu kernels (signature_grad.cpp; signature.cpp has the same steps). Layout:
// levels 1..LEVEL without level 0, level k at S + off[k] (off[1] = 0), D^k words stored with
// the FIRST letter fastest (word i1..ik at i1 + i2 D + ... + ik D^(k-1)), so that appending a
// letter i to the words of a level of np words is the block i*np: every step is D contiguous
// axpys, which vectorize whatever D is. E is float (one path) or kf_vf (one path per SIMD lane).
// dm[(m-1)*D + i] = Δ_i / m for m = 1..LEVEL.
//
// Level k, from the top down (it reads the lower, still old, levels):
//   R_0 = Δ/k;  R_m = (S^m + R_(m-1)) ⊗ Δ/(k-m), m < k-1;  S^k += (S^(k-1) + R_(k-2)) ⊗ Δ
// so a level-k term costs one multiply-add per segment (plus 1/D of that for its prefixes).

// a[p] += s[p] for p < np: the Horner step's addition, in place in R.
template <class E>
static inline void chen_add_prefixes(E* __restrict__ a, const E* __restrict__ s, long long np) {
  for (long long p = 0; p < np; ++p) a[p] += s[p];
}

// R_m from A = S^m + R_(m-1) (in r[0..np)): r[i*np + p] = A[p] * d[i], i = 0 last (in place).
template <class E>
static inline void chen_expand(E* __restrict__ r, const E* __restrict__ d, long long np, int D) {
  for (int i = D - 1; i >= 1; --i) {
    E* __restrict__ o = r + i * np;
    const E di = d[i];
    for (long long p = 0; p < np; ++p) o[p] = r[p] * di;
  }
  for (long long p = 0; p < np; ++p) r[p] *= d[0];
}

// The last step: sk[i*np + p] += A[p] * d[i].
template <class E>
static inline void chen_accumulate(E* __restrict__ sk, const E* __restrict__ a, const E* __restrict__ d, long long np,
                                   int D) {
  for (int i = 0; i < D; ++i) {
    E* __restrict__ o = sk + i * np;
    const E di = d[i];
    for (long long p = 0; p < np; ++p) o[p] += a[p] * di;
  }
}

// One segment's S <- S ⊗ exp(Δ); R holds max(D, D^(LEVEL-1)) elements.
template <class E>
static void chen_step(E* S, E* R, const E* dm, const long long* off, const long long* size, int D, int LEVEL) {
  for (int k = LEVEL; k >= 2; --k) {
    for (int i = 0; i < D; ++i) R[i] = dm[(long long)(k - 1) * D + i];  // R_0 = Δ/k
    for (int m = 1; m <= k - 2; ++m) {
      chen_add_prefixes(R, S + off[m], size[m]);
      chen_expand(R, dm + (long long)(k - m - 1) * D, size[m], D);
    }
    chen_add_prefixes(R, S + off[k - 1], size[k - 1]);
    chen_accumulate(S + off[k], R, dm, size[k - 1], D);
  }
  for (int i = 0; i < D; ++i) S[i] += dm[i];
}

// Calls f(e, at) for every word of level k: e its row-major index (last letter fastest, the
// problems' layout), at its index in the internal order above. An odometer over the row-major
// digits keeps `at` in step.
template <class F>
static void chen_for_each_word(int k, int D, F f) {
  int digit[8] = {0};
  long long stride[8];  // the internal stride of the row-major j-th digit from the right: D^(k-1-j)
  stride[k - 1] = 1;
  for (int j = k - 2; j >= 0; --j) stride[j] = stride[j + 1] * D;
  const long long n = stride[0] * D;
  long long at = 0;
  for (long long e = 0; e < n; ++e) {
    f(e, at);
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
