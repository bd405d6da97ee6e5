// kernel_svm for the cpu backend: the hinge-loss SVM by SMO, one fit in one block (one thread:
// every step needs the previous step's gradient over all rows).
//
// The dual (README): with alpha_t = A_t = y_t a_t in [lo_t, hi_t] ([0, C] for y = +1, [-C, 0] for
// y = -1, C = 1 / (N lambda)) and sum alpha = 0, minimize (1/2) alpha^T K alpha - y^T alpha. Its
// gradient is carried as v = y - K alpha (v_t = -y_t G_t, G = Q a - 1 libsvm's gradient): v_t is
// the intercept that puts row t exactly on its margin. A pair step alpha_i += s, alpha_j -= s keeps
// the sum and moves v by -s (K_:i - K_:j): two rows of K (K is symmetric), O(N).
//
// 1. K into W (kernels/common/rbf_gram.hpp).
// 2. Steps: i the row that may move up (alpha_i < hi_i) with the largest v; j the row that may
//    move down (alpha_j > lo_j) with v_j < v_i whose pair step lowers the dual the most,
//    (v_i - v_j)^2 / q_ij with q_ij = K_ii + K_jj - 2 K_ij (second-order working-set selection,
//    Fan, Chen and Lin 2005); the step (v_i - v_j) / q_ij clipped to both boxes (a clipped row
//    lands exactly on its bound). The update of v is fused with the next step's scan for i (the
//    maximal violating pair's m and M), in SIMD lanes with the row index carried as a float
//    (exact: N <= 16384 < 2^24).
// 3. Stop when m - M <= 10^-TOL_E (libsvm's stopping rule; TOL_E = 3 is its default 1e-3); then
//    v is recomputed from scratch, v = y - K alpha (rounding drifts over many fp32 steps), and
//    the steps go on if the gap reopened; or after MAXIT steps (then the verifier's check
//    decides: a fit that did not converge is `incorrect`).
// 4. B: the mean of v over the free rows (lo < alpha < hi: on the margin), else the middle of
//    [m, M] (every B there satisfies the KKT conditions). F = K alpha + B from the same product
//    that gave the final v.
//
// Parameters (all #defines):
//   TI, TJ  the Gram matrix's tile (rows, columns)
//   MAXIT   the step cap                 TOL_E  stop at a maximal-violating-pair gap of 10^-TOL_E
#ifndef TI
#define TI 32
#endif
#ifndef TJ
#define TJ 256
#endif
#ifndef MAXIT
#define MAXIT 100000
#endif
#ifndef TOL_E
#define TOL_E 3
#endif
#include <math.h>

#include "kernels/common/rbf_gram.hpp"

typedef kf_storage T;  // fp32
typedef kf_vf vf;

// The pair's curvature where K_ii + K_jj - 2 K_ij <= 0 (duplicate rows): a large, clipped step.
#define SVM_TAU 1e-12f

// The largest lane of m and its index lane (the first of equal maxima is not needed: any will do).
static inline float svm_argmax(vf m, vf idx, int* at) {
  float best = m[0];
  int k = 0;
  for (int l = 1; l < KF_VW; ++l)
    if (m[l] > best) best = m[l], k = l;
  *at = (int)idx[k];
  return best;
}

// v -= s (ki - kj) (s = 0: no update), then over all rows the extremes of the maximal violating
// pair: m = max over "may move up" of v (its row in *i), M = min over "may move down" of v.
static void svm_update_scan(float* v, const float* a, const float* lo, const float* hi, const float* ki,
                            const float* kj, float s, int N, int* i, float* m, float* M) {
  const vf neg = kf_splat(-INFINITY), pos = kf_splat(INFINITY), vs = kf_splat(s);
  vf mx = neg, mn = pos, mi = kf_splat(-1.0f), idx;
  for (int l = 0; l < KF_VW; ++l) idx[l] = (float)l;
  for (int t = 0; t < N; t += KF_VW, idx += (float)KF_VW) {
    const int n = N - t < KF_VW ? N - t : KF_VW;
    vf vt = kf_load_part(v + t, n, 0.0f);
    if (s != 0.0f) vt -= vs * (kf_load_part(ki + t, n, 0.0f) - kf_load_part(kj + t, n, 0.0f));
    if (n == KF_VW)
      kf_store(v + t, vt);
    else
      kf_store_part(v + t, n, vt);
    // Padding lanes: alpha = hi = lo = 0, so neither up nor down.
    const vf at = kf_load_part(a + t, n, 0.0f);
    const auto up = at < kf_load_part(hi + t, n, 0.0f), down = at > kf_load_part(lo + t, n, 0.0f);
    const auto better = up & (vt > mx);
    mx = better ? vt : mx;
    mi = better ? idx : mi;
    mn = down ? (vt < mn ? vt : mn) : mn;
  }
  *m = svm_argmax(mx, mi, i);
  float low = mn[0];
  for (int l = 1; l < KF_VW; ++l) low = mn[l] < low ? mn[l] : low;
  *M = low;
}

// j for the pair with i: among the rows that may move down with v_j < m, the largest
// (m - v_j)^2 / q_ij. Returns -1 if none (only a NaN gets there while m > M).
static int svm_select_j(const float* v, const float* a, const float* lo, const float* kd, const float* ki,
                        float kii, float m, int N) {
  const vf vm = kf_splat(m), vkii = kf_splat(kii), tau = kf_splat(SVM_TAU);
  vf best = kf_splat(-1.0f), bi = kf_splat(-1.0f), idx;
  for (int l = 0; l < KF_VW; ++l) idx[l] = (float)l;
  for (int t = 0; t < N; t += KF_VW, idx += (float)KF_VW) {
    const int n = N - t < KF_VW ? N - t : KF_VW;
    const vf vt = kf_load_part(v + t, n, 0.0f);
    const auto ok = (kf_load_part(a + t, n, 0.0f) > kf_load_part(lo + t, n, 0.0f)) & (vt < vm);
    const vf b = vm - vt;
    vf q = vkii + kf_load_part(kd + t, n, 0.0f) - 2.0f * kf_load_part(ki + t, n, 0.0f);
    q = q > 0.0f ? q : tau;
    const vf gain = b * b / q;
    const auto better = ok & (gain > best);
    best = better ? gain : best;
    bi = better ? idx : bi;
  }
  int j;
  svm_argmax(best, bi, &j);
  return j;
}

// s = K alpha over the rows with alpha != 0 (K symmetric: row j is column j); v = y - s.
static void svm_recompute(const float* K, const T* Y, const float* a, float* s, float* v, int N) {
  for (int t = 0; t < N; ++t) s[t] = 0.0f;
  for (int j = 0; j < N; ++j) {
    if (a[j] == 0.0f) continue;
    const float* kj = K + (size_t)j * N;
    const vf aj = kf_splat(a[j]);
    int t = 0;
    for (; t + KF_VW <= N; t += KF_VW) kf_store(s + t, kf_load(s + t) + aj * kf_load(kj + t));
    for (; t < N; ++t) s[t] += a[j] * kj[t];
  }
  for (int t = 0; t < N; ++t) v[t] = Y[t] - s[t];
}

static void kernel_svm_block(const kf_ctx&, const T* X, const T* Y, T* F, T* A, T* B, T* W, int N, int D,
                             float lambda, float gamma) {
  float* K = W;
  float* v = W + (size_t)N * N;
  float* lo = v + N;
  float* hi = lo + N;
  float* kd = hi + N;
  float* s = kd + N;
  float tol = 1.0f;
  for (int e = 0; e < TOL_E; ++e) tol *= 0.1f;
  const float C = 1.0f / ((float)N * lambda);
  rbf_gram(X, K, N, D, gamma);
  for (int t = 0; t < N; ++t) {
    A[t] = 0.0f, v[t] = Y[t], kd[t] = K[(size_t)t * N + t];
    lo[t] = Y[t] > 0.0f ? 0.0f : -C;
    hi[t] = Y[t] > 0.0f ? C : 0.0f;
  }
  int i, it = 0;
  float m, M;
  svm_update_scan(v, A, lo, hi, K, K, 0.0f, N, &i, &m, &M);
  for (;;) {
    const int it_start = it;
    for (; it < MAXIT && i >= 0 && m - M > tol; ++it) {
      const float* ki = K + (size_t)i * N;
      const int j = svm_select_j(v, A, lo, kd, ki, kd[i], m, N);
      if (j < 0) break;
      const float* kj = K + (size_t)j * N;
      float q = kd[i] + kd[j] - 2.0f * ki[j];
      if (q <= 0.0f) q = SVM_TAU;
      float step = (v[i] - v[j]) / q;
      const float room_i = hi[i] - A[i], room_j = A[j] - lo[j];
      if (step >= room_i) step = room_i;
      if (step >= room_j) step = room_j;
      A[i] = step == room_i ? hi[i] : A[i] + step;
      A[j] = step == room_j ? lo[j] : A[j] - step;
      svm_update_scan(v, A, lo, hi, ki, kj, step, N, &i, &m, &M);
    }
    // The stop is judged on v from scratch: the running updates drift by rounding.
    svm_recompute(K, Y, A, s, v, N);
    svm_update_scan(v, A, lo, hi, K, K, 0.0f, N, &i, &m, &M);
    if (it == it_start || it >= MAXIT || i < 0 || m - M <= tol) break;
  }
  // B: on the margin of the free rows (their mean), else the middle of [m, M].
  float sum_free = 0.0f;
  int free = 0;
  for (int t = 0; t < N; ++t)
    if (A[t] > lo[t] && A[t] < hi[t]) sum_free += v[t], ++free;
  const float b = free > 0 ? sum_free / free : isfinite(m) && isfinite(M) ? 0.5f * (m + M) : isfinite(m) ? m : M;
  for (int t = 0; t < N; ++t) F[t] = s[t] + b;
  B[0] = b;
}

KF_KERNEL(kernel_svm, kernel_svm_block)
