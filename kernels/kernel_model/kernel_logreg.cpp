// kernel_logreg for the cpu backend: one fit at one lambda, in one block (one thread: every
// iteration needs all of the previous one, and the cpu backend has no grid-wide barrier).
// (kernel_svm, the hinge, is SMO: kernel_svm_smo.cpp.)
//
// 1. The Gram matrix K (N x N, in W; kernels/common/rbf_gram.hpp). Its row sums bound K's
//    largest eigenvalue (Gershgorin; K >= 0), s_max.
// 2. Accelerated gradient descent on J(A, B) = (1/N) sum L(y f) + (lambda/2) A^T K A in the
//    kernel's own metric (the RKHS gradient of J is (1/N) sum_i r_i k(., x_i), r = g + N lambda A,
//    g_i = y_i L'(y_i f_i)): A -= r / (N lambda + 2 c s_max), B -= sum g / (2 c N), steps from the
//    quadratic majorizer with the logistic loss's curvature bound c = 1/4;
//    Nesterov momentum, restarted when J rises (src/kmodel's scheme). One product K A per
//    iteration; the rest is O(N).
// 3. Every CHECK iterations, the relative KKT residual in K's seminorm (km_residual: the
//    verifier's measure; one more product K r), and a stop when it is at most 10^-TOL_E; else
//    after MAXIT iterations (then the verifier's optimality check decides). F = K A + B is the
//    last product, the one the residual was computed from.
//
// Parameters (all #defines):
//   TI, TJ  the Gram matrix's tile (rows, columns; TJ a multiple of the SIMD width)
//   MAXIT   the iteration cap            TOL_E  the stopping residual is 10^-TOL_E
//   CHECK   iterations between two residual tests (each costs one more product)
#ifndef TI
#define TI 32
#endif
#ifndef TJ
#define TJ 256
#endif
#ifndef MAXIT
#define MAXIT 5000
#endif
#ifndef TOL_E
#define TOL_E 5
#endif
#ifndef CHECK
#define CHECK 8
#endif
#include <math.h>

#include "kernels/common/rbf_gram.hpp"

typedef kf_storage T;  // fp32
typedef kf_vf vf;

// The logistic loss log(1 + e^-t) and its slope at a margin t (each side of 0 without overflow).
static inline float km_loss(float t) { return t > 0.0f ? log1pf(expf(-t)) : -t + log1pf(expf(t)); }
static inline float km_slope(float t) { return t > 0.0f ? -expf(-t) / (1.0f + expf(-t)) : -1.0f / (1.0f + expf(t)); }

// sum_j row[j] * v[j] in SIMD lanes.
static inline float km_dot(const float* row, const float* v, int n) {
  vf s0 = kf_splat(0.0f), s1 = kf_splat(0.0f);
  int j = 0;
  for (; j + 2 * KF_VW <= n; j += 2 * KF_VW) {
    s0 += kf_load(row + j) * kf_load(v + j);
    s1 += kf_load(row + j + KF_VW) * kf_load(v + j + KF_VW);
  }
  for (; j < n; j += KF_VW) s0 += kf_load_part(row + j, n - j, 0.0f) * kf_load_part(v + j, n - j, 0.0f);
  s0 += s1;
  float s = 0.0f;
  for (int l = 0; l < KF_VW; ++l) s += s0[l];
  return s;
}

// f = K a + b.
static void km_product(const float* K, const float* a, float b, float* f, int N) {
  for (int i = 0; i < N; ++i) f[i] = km_dot(K + (long long)i * N, a, N) + b;
}

// J at (a, b) with f = K a + b.
static float km_objective(const T* Y, const float* a, const float* f, float b, int N, float lambda) {
  float loss = 0.0f, reg = 0.0f;
  for (int i = 0; i < N; ++i) loss += km_loss(Y[i] * f[i]), reg += a[i] * (f[i] - b);
  return loss / N + 0.5f * lambda * reg;
}

// The relative KKT residual at (a, b) with f = K a + b, in K's seminorm |v|_K = sqrt(v^T K v):
// max(|r|_K / (2 N lambda |a|_K), |sum g| / |g|_1), r = g + N lambda a (|g|_K = N lambda |a|_K at
// the minimizer, so the first denominator is the verifier's |g|_K + N lambda |a|_K there).
// a^T K a = a . (f - b) is free; r^T K r is one pass over K. Near convergence r^T K r is tiny and
// computed with cancellation (on smooth kernels r has large components along K's tiny
// eigenvalues): its fp32 value can even come out negative. So the test takes an upper bound, the
// computed value plus its rounding bound 2 (N + 4) u |r|^T K |r| (K >= 0; the same pass), and
// never stops on a rounding artefact. g, r and kr (|r|) receive the vectors.
static float km_residual(const T* Y, const float* K, const float* a, const float* f, float b, float* g, float* r,
                         float* kr, int N, float nl) {
  float g1 = 0.0f, gs = 0.0f, aka = 0.0f, rkr = 0.0f, akr = 0.0f;
  for (int i = 0; i < N; ++i) {
    g[i] = Y[i] * km_slope(Y[i] * f[i]);
    r[i] = g[i] + nl * a[i];
    kr[i] = fabsf(r[i]);
    g1 += fabsf(g[i]), gs += g[i], aka += a[i] * (f[i] - b);
  }
  for (int i = 0; i < N; ++i) {
    const float* row = K + (long long)i * N;
    rkr += r[i] * km_dot(row, r, N);
    akr += kr[i] * km_dot(row, kr, N);
  }
  const float noise = 2.0f * (N + 4) * 5.9604645e-8f * akr;
  const float den = 2.0f * nl * sqrtf(aka > 0.0f ? aka : 0.0f);
  const float ra = den > 0.0f ? sqrtf((rkr > 0.0f ? rkr : 0.0f) + noise) / den : 1.0f;
  const float rb = g1 > 0.0f ? fabsf(gs) / g1 : 0.0f;
  return ra > rb ? ra : rb;
}

static void km_fit(const kf_ctx&, const T* X, const T* Y, T* F, T* A, T* B, T* W, int N, int D, float lambda,
                   float gamma) {
  float* K = W;
  float* az = W + (size_t)N * N;  // the extrapolated point (az, bz) and its f
  float* fz = az + N;
  float* an = fz + N;  // the next iterate and its f
  float* fn = an + N;
  float* g = fn + N;
  float* r = g + N;
  float* kr = r + N;
  const float c = 0.25f, nl = N * lambda;  // the logistic loss's curvature bound
  float tol = 1.0f;
  for (int e = 0; e < TOL_E; ++e) tol *= 0.1f;
  const float smax = rbf_gram(X, K, N, D, gamma);
  const float eta = 1.0f / (nl + 2.0f * c * smax), eta_b = 1.0f / (2.0f * c * N);
  // The iterate (A, B) with F = K A + B starts at zero.
  float b = 0.0f, bz = 0.0f, t = 1.0f;
  for (int i = 0; i < N; ++i) A[i] = az[i] = 0.0f, F[i] = fz[i] = 0.0f;
  float J = km_objective(Y, A, F, b, N, lambda);
  {
    for (int it = 0; it < MAXIT; ++it) {
      float gs = 0.0f;
      for (int i = 0; i < N; ++i) {
        g[i] = Y[i] * km_slope(Y[i] * fz[i]);
        gs += g[i];
        an[i] = az[i] - eta * (g[i] + nl * az[i]);
      }
      const float bn = bz - eta_b * gs;
      km_product(K, an, bn, fn, N);
      const float Jn = km_objective(Y, an, fn, bn, N, lambda);
      const bool done = (it + 1) % CHECK == 0 && km_residual(Y, K, an, fn, bn, g, r, kr, N, nl) <= tol;
      if (!done && Jn <= J) {
        const float tn = 0.5f * (1.0f + sqrtf(1.0f + 4.0f * t * t)), mom = (t - 1.0f) / tn;
        for (int i = 0; i < N; ++i) az[i] = an[i] + mom * (an[i] - A[i]), fz[i] = fn[i] + mom * (fn[i] - F[i]);
        bz = bn + mom * (bn - b);
        t = tn;
      } else {  // a restart (J rose): the plain step from the new iterate
        for (int i = 0; i < N; ++i) az[i] = an[i], fz[i] = fn[i];
        bz = bn;
        t = 1.0f;
      }
      for (int i = 0; i < N; ++i) A[i] = an[i], F[i] = fn[i];
      b = bn, J = Jn;
      if (done) break;
    }
  }
  B[0] = b;
}

KF_KERNEL(kernel_logreg, km_fit)
