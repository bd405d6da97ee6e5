// kernel_svm for the cuda backend: the hinge-loss SVM by SMO in ONE block of THREADS threads,
// line for line kernel_svm_smo.cl's algorithm (kernel_svm_smo.cpp's header and the README have
// the math): row t belongs to thread t % THREADS for the whole fit, each step is two block
// reductions in shared memory (the best j; the update of v fused with the next i, m and M), the
// stop at a maximal-violating-pair gap of 10^-TOL_E judged on v recomputed from scratch. One
// block because every step needs the previous step's v from all rows (a grid-wide sync would
// need a cooperative launch). Limits: one SM's speed; THREADS <= 1024.
//
// Parameters (all #defines): THREADS threads (a power of two), MAXIT the step cap, TOL_E: stop
// at a gap of 10^-TOL_E.
typedef kf_storage T;  // fp32

#define WG THREADS
#define SVM_TAU 1e-12f  // the pair's curvature where K_ii + K_jj - 2 K_ij <= 0 (duplicate rows)

// The group's largest `val` (and its `row`), and its smallest `low`: every work-item gets them.
// Ties go to the lower row, so the result does not depend on timing.
__device__ __forceinline__ void svm_reduce(float* rv, int* ri, float* rm, float* val, int* row, float* low) {
  const int lid = (int)threadIdx.x;
  rv[lid] = *val, ri[lid] = *row, rm[lid] = *low;
  __syncthreads();
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) {
      const float a = rv[lid], b = rv[lid + s];
      if (b > a || (b == a && ri[lid + s] >= 0 && (ri[lid] < 0 || ri[lid + s] < ri[lid])))
        rv[lid] = b, ri[lid] = ri[lid + s];
      rm[lid] = fminf(rm[lid], rm[lid + s]);
    }
    __syncthreads();
  }
  *val = rv[0], *row = ri[0], *low = rm[0];
  __syncthreads();
}

// v_t -= s (K_it - K_jt) on this work-item's rows (s = 0: none), then the group's m (max of v
// over "may move up": alpha < hi) with its row i, and M (min over "may move down": alpha > lo).
__device__ __forceinline__ void svm_update_scan(float* v, const float* a, const T* Y, float C,
                            const float* ki, const float* kj, float s, int N, float* rv,
                            int* ri, float* rm, int* i, float* m, float* M) {
  float mx = KF_NEG_INF, mn = (-KF_NEG_INF);
  int at = -1;
  for (int t = (int)threadIdx.x; t < N; t += WG) {
    float vt = v[t];
    if (s != 0.0f) v[t] = vt = vt - s * (ki[t] - kj[t]);
    const float lo = Y[t] > 0.0f ? 0.0f : -C, hi = Y[t] > 0.0f ? C : 0.0f;
    if (a[t] < hi && vt > mx) mx = vt, at = t;
    if (a[t] > lo && vt < mn) mn = vt;
  }
  svm_reduce(rv, ri, rm, &mx, &at, &mn);
  *m = mx, *i = at, *M = mn;
}

// j: among the rows that may move down with v_j < m, the largest (m - v_j)^2 / q_ij.
__device__ __forceinline__ int svm_select_j(const float* v, const float* a, const T* Y, float C,
                        const float* kd, const float* ki, float kii, float m, int N,
                        float* rv, int* ri, float* rm) {
  float best = -1.0f, unused = 0.0f;
  int j = -1;
  for (int t = (int)threadIdx.x; t < N; t += WG) {
    const float lo = Y[t] > 0.0f ? 0.0f : -C;
    if (!(a[t] > lo) || !(v[t] < m)) continue;
    const float b = m - v[t];
    float q = kii + kd[t] - 2.0f * ki[t];
    if (q <= 0.0f) q = SVM_TAU;
    const float gain = b * b / q;
    if (gain > best) best = gain, j = t;
  }
  svm_reduce(rv, ri, rm, &best, &j, &unused);
  return j;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    kernel_svm(const T* X, const T* Y, T* F, T* A, T* B, T* W, int N, int D, float lambda, float gamma) {
  __shared__ float rv[WG], rm[WG];
  __shared__ int ri[WG];
  const int lid = (int)threadIdx.x;
  float* K = W;
  float* v = W + (long long)N * N;
  float* kd = v + N;
  float* s = kd + N;
  float tol = 1.0f;
  for (int e = 0; e < TOL_E; ++e) tol *= 0.1f;
  const float C = 1.0f / ((float)N * lambda);
  // The Gram matrix (rows over the group), its diagonal, the start alpha = 0, v = y.
  for (int i = lid; i < N; i += WG) {
    for (int j = 0; j < N; ++j) {
      float d2 = 0.0f;
      for (int d = 0; d < D; ++d) {
        const float e = X[(long long)i * D + d] - X[(long long)j * D + d];
        d2 += e * e;
      }
      K[(long long)i * N + j] = expf(d2 * -gamma);
    }
    kd[i] = K[(long long)i * N + i];
    A[i] = 0.0f, v[i] = Y[i];
  }
  __syncthreads();
  int i, it = 0;
  float m, M;
  svm_update_scan(v, A, Y, C, K, K, 0.0f, N, rv, ri, rm, &i, &m, &M);
  for (;;) {
    const int it_start = it;
    for (; it < MAXIT && i >= 0 && m - M > tol; ++it) {
      const float* ki = K + (long long)i * N;
      __syncthreads();  // the last scan's v and alpha, from every work-item
      const int j = svm_select_j(v, A, Y, C, kd, ki, kd[i], m, N, rv, ri, rm);
      if (j < 0) break;
      const float* kj = K + (long long)j * N;
      float q = kd[i] + kd[j] - 2.0f * ki[j];
      if (q <= 0.0f) q = SVM_TAU;
      const float ai = A[i], aj = A[j];
      const float hi_i = Y[i] > 0.0f ? C : 0.0f, lo_j = Y[j] > 0.0f ? 0.0f : -C;
      float step = (v[i] - v[j]) / q;
      const float room_i = hi_i - ai, room_j = aj - lo_j;
      if (step >= room_i) step = room_i;
      if (step >= room_j) step = room_j;
      __syncthreads();  // every work-item has read alpha_i, alpha_j, v_i, v_j
      if (i % WG == lid) A[i] = step == room_i ? hi_i : ai + step;
      if (j % WG == lid) A[j] = step == room_j ? lo_j : aj - step;
      svm_update_scan(v, A, Y, C, ki, kj, step, N, rv, ri, rm, &i, &m, &M);
    }
    // The stop is judged on v from scratch (rounding drifts over many fp32 steps): s = K alpha.
    __syncthreads();
    for (int t = lid; t < N; t += WG) {
      const float* row = K + (long long)t * N;
      float acc = 0.0f;
      for (int j = 0; j < N; ++j) acc += row[j] * A[j];
      s[t] = acc, v[t] = Y[t] - acc;
    }
    svm_update_scan(v, A, Y, C, K, K, 0.0f, N, rv, ri, rm, &i, &m, &M);
    if (it == it_start || it >= MAXIT || i < 0 || m - M <= tol) break;
  }
  // B: the mean of v over the free rows (on the margin), else the middle of [m, M].
  float sum = 0.0f, cnt = 0.0f;
  for (int t = lid; t < N; t += WG) {
    const float lo = Y[t] > 0.0f ? 0.0f : -C, hi = Y[t] > 0.0f ? C : 0.0f;
    if (A[t] > lo && A[t] < hi) sum += v[t], cnt += 1.0f;
  }
  // Two sums through the reduction's sum-free slots: reuse rv for the sum, rm for the count.
  rv[lid] = sum, rm[lid] = cnt;
  __syncthreads();
  for (int w = WG / 2; w > 0; w >>= 1) {
    if (lid < w) rv[lid] += rv[lid + w], rm[lid] += rm[lid + w];
    __syncthreads();
  }
  const float b = rm[0] > 0.0f ? rv[0] / rm[0] : isfinite(m) && isfinite(M) ? 0.5f * (m + M) : isfinite(m) ? m : M;
  for (int t = lid; t < N; t += WG) F[t] = s[t] + b;
  if (lid == 0) B[0] = b;
}
