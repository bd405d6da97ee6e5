// kernel_logreg for the cuda backend (kernel_svm, the hinge: kernel_svm_smo.cu): the whole fit in
// ONE block of THREADS threads, as kernel_logreg.cl does in one work-group (the Gram matrix into W, then accelerated gradient
// descent in the kernel's metric with a relative-KKT-residual stopping test; the README has the
// math). One block because every iteration needs the previous one's product K A from all rows
// (a grid-wide sync would need a cooperative launch). Limits: one SM's speed; THREADS <= 1024.
//
// Parameters (all #defines): THREADS threads (a power of two), MAXIT the iteration cap, TOL_E:
// stop at a residual of 10^-TOL_E, CHECK: iterations between two residual tests.
typedef kf_storage T;  // fp32

#define KM_SUMS 5
#define WG THREADS

__device__ __forceinline__ float km_loss(float t) {
  return t > 0.0f ? log1pf(expf(-t)) : -t + log1pf(expf(t));
}
__device__ __forceinline__ float km_slope(float t) {
  return t > 0.0f ? -expf(-t) / (1.0f + expf(-t)) : -1.0f / (1.0f + expf(t));
}

// Sums KM_SUMS values over the group: v[k] in, every work-item gets the totals back in v.
__device__ __forceinline__ void km_reduce(float* red, float* v) {
  const int lid = (int)threadIdx.x;
  for (int k = 0; k < KM_SUMS; ++k) red[k * WG + lid] = v[k];
  __syncthreads();
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s)
      for (int k = 0; k < KM_SUMS; ++k) red[k * WG + lid] += red[k * WG + lid + s];
    __syncthreads();
  }
  for (int k = 0; k < KM_SUMS; ++k) v[k] = red[k * WG];
  __syncthreads();
}

// f = K a + b, rows split over the group.
__device__ __forceinline__ void km_product(const float* K, const float* a, float b, float* f, int N) {
  for (int i = (int)threadIdx.x; i < N; i += WG) {
    const float* row = K + (long long)i * N;
    float s = 0.0f;
    for (int j = 0; j < N; ++j) s += row[j] * a[j];
    f[i] = s + b;
  }
  __syncthreads();
}

// J at (a, b) from f = K a + b.
__device__ __forceinline__ float km_objective(float* red, const T* Y, const float* a,
                          const float* f, float b, int N, float lambda) {
  float w[KM_SUMS] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = (int)threadIdx.x; i < N; i += WG)
    w[0] += km_loss(Y[i] * f[i]), w[1] += a[i] * (f[i] - b);
  km_reduce(red, w);
  return w[0] / N + 0.5f * lambda * w[1];
}

// The relative KKT residual in K's seminorm (kernel_logreg.cpp's km_residual: an upper bound,
// the computed r^T K r plus its rounding bound): r into `r`, |r| into `kr`, then
// max(|r|_K / (2 N lambda |a|_K), |sum g| / |g|_1).
// Called in every iteration, `on` in those that test (every CHECK-th): its barriers are then
// reached unconditionally (__syncthreads under a branch must be uniform; this keeps it obviously so).
__device__ __forceinline__ float km_residual(int on, float* red, const T* Y, const float* K,
                         const float* a, const float* f, float b, float* r,
                         float* kr, int N, float nl) {
  float v[KM_SUMS] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  const int n = on ? N : 0;
  for (int i = (int)threadIdx.x; i < n; i += WG) {
    const float g = Y[i] * km_slope(Y[i] * f[i]);
    r[i] = g + nl * a[i];
    kr[i] = fabsf(r[i]);
    v[0] += fabsf(g), v[1] += g, v[2] += a[i] * (f[i] - b);
  }
  __syncthreads();
  for (int i = (int)threadIdx.x; i < n; i += WG) {
    const float* row = K + (long long)i * N;
    float s = 0.0f, t = 0.0f;
    for (int j = 0; j < N; ++j) s += row[j] * r[j], t += row[j] * kr[j];
    v[3] += r[i] * s, v[4] += kr[i] * t;
  }
  km_reduce(red, v);
  const float noise = 2.0f * (N + 4) * 5.9604645e-8f * v[4];
  const float den = 2.0f * nl * sqrtf(v[2] > 0.0f ? v[2] : 0.0f);
  const float ra = den > 0.0f ? sqrtf((v[3] > 0.0f ? v[3] : 0.0f) + noise) / den : 1.0f;
  const float rb = v[0] > 0.0f ? fabsf(v[1]) / v[0] : 0.0f;
  return on ? (ra > rb ? ra : rb) : 1.0f;
}

__device__ __forceinline__ void km_fit(const T* X, const T* Y, T* F, T* A, T* B,
                   T* W, int N, int D, float lambda, float gamma, float* red) {
  const int lid = (int)threadIdx.x;
  float* K = W;
  float* az = W + (long long)N * N;
  float* fz = az + N;
  float* an = fz + N;
  float* fn = an + N;
  float* r = fn + N;
  float* kr = r + N;
  // The Gram matrix, and its largest row sum (K >= 0: a bound on its largest eigenvalue).
  float v[KM_SUMS] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = lid; i < N; i += WG) {
    float s = 0.0f;
    for (int j = 0; j < N; ++j) {
      float d2 = 0.0f;
      for (int d = 0; d < D; ++d) {
        const float e = X[(long long)i * D + d] - X[(long long)j * D + d];
        d2 += e * e;
      }
      const float k = expf(d2 * -gamma);
      K[(long long)i * N + j] = k;
      s += k;
    }
    v[0] = s > v[0] ? s : v[0];
  }
  // A maximum through the sum's tree: each slot holds its own maximum, combined by max below.
  red[lid] = v[0];
  __syncthreads();
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] = fmaxf(red[lid], red[lid + s]);
    __syncthreads();
  }
  const float smax = red[0];
  __syncthreads();
  const float c = 0.25f, nl = N * lambda;  // the logistic loss's curvature bound
  const float eta = 1.0f / (nl + 2.0f * c * smax), eta_b = 1.0f / (2.0f * c * N);
  float tol = 1.0f;
  for (int e = 0; e < TOL_E; ++e) tol *= 0.1f;
  for (int i = lid; i < N; i += WG) A[i] = az[i] = 0.0f, F[i] = fz[i] = 0.0f;
  __syncthreads();
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
    __syncthreads();
    const float bn = bz - eta_b * s[0];
    km_product(K, an, bn, fn, N);
    const float Jn = km_objective(red, Y, an, fn, bn, N, lambda);
    done = km_residual((it + 1) % CHECK == 0, red, Y, K, an, fn, bn, r, kr, N, nl) <= tol;
    float mom = 0.0f;
    if (!done && Jn <= J) {
      const float tn = 0.5f * (1.0f + sqrtf(1.0f + 4.0f * t * t));
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
    __syncthreads();
  }
  if (lid == 0) B[0] = b;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    kernel_logreg(const T* X, const T* Y, T* F, T* A, T* B, T* W, int N, int D, float lambda, float gamma) {
  __shared__ float red[KM_SUMS * WG];
  km_fit(X, Y, F, A, B, W, N, D, lambda, gamma, red);
}
