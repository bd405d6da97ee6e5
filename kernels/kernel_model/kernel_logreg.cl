// kernel_logreg for the opencl backend (kernel_svm, the hinge: kernel_svm_smo.cl): the whole fit
// in ONE work-group of WG work-items (kernel_logreg.cpp's algorithm: the Gram matrix into W, then accelerated gradient
// descent in the kernel's metric with a relative-KKT-residual stopping test; the README has the
// math). One work-group because every iteration needs the previous one's product K A from all
// rows, and OpenCL 1.2 has no grid-wide barrier; barrier() orders global memory inside the group.
// Limits: one compute unit's speed (fine for the demo's N ~ 10^3; a multi-group version would
// need one launch per iteration), and WG <= the device's work-group size.
//
// Parameters (all #defines): WG work-items (a power of two), MAXIT the iteration cap, TOL_E: stop
// at a residual of 10^-TOL_E, CHECK: iterations between two residual tests.
typedef kf_storage T;  // fp32

#define KM_SUMS 5

inline float km_loss(float t) {
  return t > 0.0f ? log1p(exp(-t)) : -t + log1p(exp(t));
}
inline float km_slope(float t) {
  return t > 0.0f ? -exp(-t) / (1.0f + exp(-t)) : -1.0f / (1.0f + exp(t));
}

// Sums KM_SUMS values over the group: v[k] in, every work-item gets the totals back in v.
inline void km_reduce(__local float* red, float* v) {
  const int lid = get_local_id(0);
  for (int k = 0; k < KM_SUMS; ++k) red[k * WG + lid] = v[k];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s)
      for (int k = 0; k < KM_SUMS; ++k) red[k * WG + lid] += red[k * WG + lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int k = 0; k < KM_SUMS; ++k) v[k] = red[k * WG];
  barrier(CLK_LOCAL_MEM_FENCE);
}

// f = K a + b, rows split over the group.
inline void km_product(__global const float* K, __global const float* a, float b, __global float* f, int N) {
  for (int i = get_local_id(0); i < N; i += WG) {
    __global const float* row = K + (long)i * N;
    float s = 0.0f;
    for (int j = 0; j < N; ++j) s += row[j] * a[j];
    f[i] = s + b;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
}

// J at (a, b) from f = K a + b.
inline float km_objective(__local float* red, __global const T* Y, __global const float* a,
                          __global const float* f, float b, int N, float lambda) {
  float w[KM_SUMS] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = get_local_id(0); i < N; i += WG)
    w[0] += km_loss(Y[i] * f[i]), w[1] += a[i] * (f[i] - b);
  km_reduce(red, w);
  return w[0] / N + 0.5f * lambda * w[1];
}

// The relative KKT residual in K's seminorm (kernel_logreg.cpp's km_residual: an upper bound,
// the computed r^T K r plus its rounding bound): r into `r`, |r| into `kr`, then
// max(|r|_K / (2 N lambda |a|_K), |sum g| / |g|_1).
// Called in every iteration, `on` in those that test (every CHECK-th): its barriers are then
// reached unconditionally (PoCL synchronized the group wrongly with them under a branch).
inline float km_residual(int on, __local float* red, __global const T* Y, __global const float* K,
                         __global const float* a, __global const float* f, float b, __global float* r,
                         __global float* kr, int N, float nl) {
  float v[KM_SUMS] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  const int n = on ? N : 0;
  for (int i = get_local_id(0); i < n; i += WG) {
    const float g = Y[i] * km_slope(Y[i] * f[i]);
    r[i] = g + nl * a[i];
    kr[i] = fabs(r[i]);
    v[0] += fabs(g), v[1] += g, v[2] += a[i] * (f[i] - b);
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int i = get_local_id(0); i < n; i += WG) {
    __global const float* row = K + (long)i * N;
    float s = 0.0f, t = 0.0f;
    for (int j = 0; j < N; ++j) s += row[j] * r[j], t += row[j] * kr[j];
    v[3] += r[i] * s, v[4] += kr[i] * t;
  }
  km_reduce(red, v);
  const float noise = 2.0f * (N + 4) * 5.9604645e-8f * v[4];
  const float den = 2.0f * nl * sqrt(v[2] > 0.0f ? v[2] : 0.0f);
  const float ra = den > 0.0f ? sqrt((v[3] > 0.0f ? v[3] : 0.0f) + noise) / den : 1.0f;
  const float rb = v[0] > 0.0f ? fabs(v[1]) / v[0] : 0.0f;
  return on ? (ra > rb ? ra : rb) : 1.0f;
}

inline void km_fit(__global const T* X, __global const T* Y, __global T* F, __global T* A, __global T* B,
                   __global T* W, int N, int D, float lambda, float gamma, __local float* red) {
  const int lid = get_local_id(0);
  __global float* K = W;
  __global float* az = W + (long)N * N;
  __global float* fz = az + N;
  __global float* an = fz + N;
  __global float* fn = an + N;
  __global float* r = fn + N;
  __global float* kr = r + N;
  // The Gram matrix, and its largest row sum (K >= 0: a bound on its largest eigenvalue).
  float v[KM_SUMS] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = lid; i < N; i += WG) {
    float s = 0.0f;
    for (int j = 0; j < N; ++j) {
      float d2 = 0.0f;
      for (int d = 0; d < D; ++d) {
        const float e = X[(long)i * D + d] - X[(long)j * D + d];
        d2 += e * e;
      }
      const float k = exp(d2 * -gamma);
      K[(long)i * N + j] = k;
      s += k;
    }
    v[0] = s > v[0] ? s : v[0];
  }
  // A maximum through the sum's tree: each slot holds its own maximum, combined by max below.
  red[lid] = v[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] = fmax(red[lid], red[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float smax = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  const float c = 0.25f, nl = N * lambda;  // the logistic loss's curvature bound
  const float eta = 1.0f / (nl + 2.0f * c * smax), eta_b = 1.0f / (2.0f * c * N);
  float tol = 1.0f;
  for (int e = 0; e < TOL_E; ++e) tol *= 0.1f;
  for (int i = lid; i < N; i += WG) A[i] = az[i] = 0.0f, F[i] = fz[i] = 0.0f;
  barrier(CLK_GLOBAL_MEM_FENCE);
  float b = 0.0f, bz = 0.0f, t = 1.0f;
  float J = km_objective(red, Y, A, F, b, N, lambda);
  bool done = false;
  for (int it = 0; it < MAXIT && !done; ++it) {
    float s[KM_SUMS] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = lid; i < N; i += WG) {
      const float g = Y[i] * km_slope(Y[i] * fz[i]);
      s[0] += g;
      an[i] = az[i] - eta * (g + nl * az[i]);
    }
    km_reduce(red, s);
    barrier(CLK_GLOBAL_MEM_FENCE);
    const float bn = bz - eta_b * s[0];
    km_product(K, an, bn, fn, N);
    const float Jn = km_objective(red, Y, an, fn, bn, N, lambda);
    done = km_residual((it + 1) % CHECK == 0, red, Y, K, an, fn, bn, r, kr, N, nl) <= tol;
    float mom = 0.0f;
    if (!done && Jn <= J) {
      const float tn = 0.5f * (1.0f + sqrt(1.0f + 4.0f * t * t));
      mom = (t - 1.0f) / tn;
      t = tn;
    } else {
      t = 1.0f;  // a restart (J rose), or done
    }
    for (int i = lid; i < N; i += WG) {
      az[i] = an[i] + mom * (an[i] - A[i]), fz[i] = fn[i] + mom * (fn[i] - F[i]);
      A[i] = an[i], F[i] = fn[i];
    }
    bz = bn + mom * (bn - b);
    b = bn, J = Jn;
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (lid == 0) B[0] = b;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void kernel_logreg(
    __global const T* X, __global const T* Y, __global T* F, __global T* A, __global T* B, __global T* W, int N,
    int D, float lambda, float gamma) {
  __local float red[KM_SUMS * WG];
  km_fit(X, Y, F, A, B, W, N, D, lambda, gamma, red);
}
