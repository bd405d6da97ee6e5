// signature_grad for the cpu backend: GX (B,L,D) = d <GS, signature(X)> / dX, the mathematics
// in grad_problem.cpp. Per path: the forward pass to the whole signature S, then the segments
// backwards, recovering each prefix as S ⊗ exp(-Δ) instead of storing it, the adjoint through
// the product with exp(Δ) and through exp(Δ) into Δ. Seven truncated tensors (with level 0,
// row-major words) per thread, whatever L is.
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

// C = A ⊗ E: C^k[uv] = sum_j A^j[u] E^(k-j)[v]; the inner loop over v is contiguous.
static void tensor_mul(const Levels& lv, const float* A, const float* E, float* __restrict__ C) {
  std::memset(C, 0, sizeof(float) * lv.off[lv.N + 1]);
  for (int k = 0; k <= lv.N; ++k)
    for (int j = 0; j <= k; ++j) {
      const long long sm = lv.size[k - j];
      const float* e = E + lv.off[k - j];
      for (long long u = 0; u < lv.size[j]; ++u) {
        const float a = A[lv.off[j] + u];
        float* c = C + lv.off[k] + u * sm;
        for (long long v = 0; v < sm; ++v) c[v] += a * e[v];
      }
    }
}

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

static void signature_grad_block(const kf_ctx& c, const T* X, const T* GS, T* GX, int B, int L, int D, int LEVEL) {
  Levels lv;
  lv.D = D, lv.N = LEVEL, lv.off[0] = 0, lv.size[0] = 1;
  for (int k = 1; k <= LEVEL + 1; ++k) lv.off[k] = lv.off[k - 1] + lv.size[k - 1], lv.size[k] = lv.size[k - 1] * D;
  const long long n = lv.off[LEVEL + 1], siglen = n - 1, stride = (n + 15) & ~15LL;
  float* S = scratch(7 * stride + 3 * (long long)D);
  float *A = S + stride, *E = A + stride, *Einv = E + stride, *gS = Einv + stride, *gA = gS + stride, *gE = gA + stride;
  float *delta = gE + stride, *neg = delta + D, *gd = neg + D;
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
      tensor_exp(lv, delta, E);
      tensor_mul(lv, S, E, A);
      float* s = S;
      S = A, A = s;
    }
    gS[0] = 0.0f;
    for (long long e = 0; e < siglen; ++e) gS[e + 1] = GS[b * siglen + e];
    for (long long e = 0; e < (long long)L * D; ++e) gx[e] = 0.0f;
    for (int t = L - 1; t >= 1; --t) {
      increment(t);
      tensor_exp(lv, delta, E);
      tensor_exp(lv, neg, Einv);
      tensor_mul(lv, S, Einv, A);  // the prefix before segment t
      tensor_mul_adjoint(lv, A, E, gS, gA, gE);
      for (int i = 0; i < D; ++i) gd[i] = 0.0f;
      tensor_exp_adjoint(lv, delta, E, gE, gd);
      for (int i = 0; i < D; ++i) gx[t * D + i] += gd[i], gx[(t - 1) * D + i] -= gd[i];
      float* s = S;
      S = A, A = s;
      s = gS;
      gS = gA, gA = s;
    }
  }
}

KF_KERNEL(signature_grad, signature_grad_block)
