// signature_grad for the cpu backend: GX (B,L,D) = d <GS, signature(X)> / dX, the mathematics
// in grad_problem.cpp. Per path: the forward pass to the whole signature S, then the segments
// backwards, recovering each prefix in place as S ⊗ exp(-Δ) instead of storing it, the adjoint
// through the product with exp(Δ) and through exp(Δ) into Δ. The products with exp(±Δ) run by
// Horner's rule (mul_exp_in_place); the adjoint is the general product's. Seven truncated
// tensors' room (with level 0, row-major words) per thread, whatever L is: its own buffer,
// cache-resident and reused across a thread's paths, not the problem's workspace W (which the
// GPU kernels use; W is poisoned before every run, which the cpu kernel needs not pay to read).
//
// Parameters (all #defines):
//   PATHS  paths per block
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

struct Levels {
  int D, N;
  long long off[9], size[9];
};

// adj A (ga) and adj E (ge) of C = A ⊗ E from adj C (gc), overwritten.
static void tensor_mul_adjoint(const Levels& lv, const float* A, const float* E, const float* gc, float* __restrict__ ga,
                               float* __restrict__ ge) {
  std::memset(ga, 0, sizeof(float) * lv.off[lv.N + 1]);
  std::memset(ge, 0, sizeof(float) * lv.off[lv.N + 1]);
  for (int k = 0; k <= lv.N; ++k)
    for (int j = 0; j <= k; ++j) {
      const long long sm = lv.size[k - j];
      const float* e = E + lv.off[k - j];
      float* g_e = ge + lv.off[k - j];
      for (long long u = 0; u < lv.size[j]; ++u) {
        const float* g = gc + lv.off[k] + u * sm;
        const float a = A[lv.off[j] + u];
        float s = 0.0f;
        for (long long v = 0; v < sm; ++v) s += g[v] * e[v], g_e[v] += g[v] * a;
        ga[lv.off[j] + u] += s;
      }
    }
}

// E = exp(Δ): E^m[w] = E^(m-1)[w / D] Δ[w % D] / m.
static void tensor_exp(const Levels& lv, const float* delta, float* E) {
  E[0] = 1.0f;
  for (int m = 1; m <= lv.N; ++m) {
    const float inv = 1.0f / (float)m;
    for (long long p = 0; p < lv.size[m - 1]; ++p) {
      const float e = E[lv.off[m - 1] + p] * inv;
      for (int i = 0; i < lv.D; ++i) E[lv.off[m] + p * lv.D + i] = e * delta[i];
    }
  }
}

// adj Δ (gd, added to) from adj E (ge, consumed), levels top down.
static void tensor_exp_adjoint(const Levels& lv, const float* delta, const float* E, float* ge, float* gd) {
  for (int m = lv.N; m >= 1; --m) {
    const float inv = 1.0f / (float)m;
    for (long long p = 0; p < lv.size[m - 1]; ++p) {
      const float* g = ge + lv.off[m] + p * lv.D;
      const float e = E[lv.off[m - 1] + p] * inv;
      float s = 0.0f;
      for (int i = 0; i < lv.D; ++i) s += g[i] * delta[i], gd[i] += g[i] * e;
      ge[lv.off[m - 1] + p] += s * inv;
    }
  }
}

// S <- S ⊗ exp(Δ) in place, levels from the top down (level k reads only lower, still old
// levels), each by Horner's rule over the word's prefixes as signature.cpp does:
//   R_0 = Δ/k,  R_m[u*D + i] = (R_(m-1)[u] + S^m[u]) Δ_i/(k-m),  S^k += R_(k-1)
// about 1.3 D^k multiply-adds for level k instead of a general product's (k+1) D^k.
static void mul_exp_in_place(const Levels& lv, float* S, const float* delta, float* R0, float* R1) {
  const int D = lv.D;
  for (int k = lv.N; k >= 1; --k) {
    float* r = R0;
    float* next = R1;
    const float ik = 1.0f / (float)k;
    for (int i = 0; i < D; ++i) r[i] = delta[i] * ik;
    for (int m = 1; m < k; ++m) {
      const float* sm = S + lv.off[m];
      const float im = 1.0f / (float)(k - m);
      for (long long u = 0; u < lv.size[m]; ++u) {
        const float a = r[u] + sm[u];
        for (int i = 0; i < D; ++i) next[u * D + i] = a * (delta[i] * im);
      }
      float* t = r;
      r = next, next = t;
    }
    float* sk = S + lv.off[k];
    for (long long w = 0; w < lv.size[k]; ++w) sk[w] += r[w];
  }
}

static void signature_grad_block(const kf_ctx& c, const T* X, const T* GS, T* GX, T* /*W*/, int B, int L, int D,
                                 int LEVEL) {
  Levels lv;
  lv.D = D, lv.N = LEVEL, lv.off[0] = 0, lv.size[0] = 1;
  for (int k = 1; k <= LEVEL + 1; ++k) lv.off[k] = lv.off[k - 1] + lv.size[k - 1], lv.size[k] = lv.size[k - 1] * D;
  const long long n = lv.off[LEVEL + 1], siglen = n - 1, stride = (n + 15) & ~15LL;
  float* S = scratch(7 * stride + 3 * (long long)D);
  float *E = S + stride, *gS = E + stride, *gA = gS + stride, *gE = gA + stride;
  float *R0 = gE + stride, *R1 = R0 + stride, *delta = R1 + stride, *neg = delta + D, *gd = neg + D;
  for (long long b = (long long)c.block_idx.x * PATHS; b < ((long long)c.block_idx.x + 1) * PATHS && b < B; ++b) {
    const T* x = X + b * L * D;
    T* gx = GX + b * L * D;
    auto increment = [&](int t) {
      for (int i = 0; i < D; ++i) delta[i] = x[t * D + i] - x[(t - 1) * D + i], neg[i] = -delta[i];
    };
    std::memset(S, 0, sizeof(float) * n);
    S[0] = 1.0f;
    for (int t = 1; t < L; ++t) {
      increment(t);
      mul_exp_in_place(lv, S, delta, R0, R1);
    }
    gS[0] = 0.0f;
    for (long long e = 0; e < siglen; ++e) gS[e + 1] = GS[b * siglen + e];
    for (long long e = 0; e < (long long)L * D; ++e) gx[e] = 0.0f;
    for (int t = L - 1; t >= 1; --t) {
      increment(t);
      tensor_exp(lv, delta, E);
      mul_exp_in_place(lv, S, neg, R0, R1);  // the prefix before segment t, in place
      tensor_mul_adjoint(lv, S, E, gS, gA, gE);
      for (int i = 0; i < D; ++i) gd[i] = 0.0f;
      tensor_exp_adjoint(lv, delta, E, gE, gd);
      for (int i = 0; i < D; ++i) gx[t * D + i] += gd[i], gx[(t - 1) * D + i] -= gd[i];
      float* s = gS;
      gS = gA, gA = s;
    }
  }
}

KF_KERNEL(signature_grad, signature_grad_block)
