// kernel_kmeans for the opencl backend: one Lloyd step of kernel k-means, never an N x N
// buffer; scalar kind 0: RBF exp(-gamma d2), 1: polynomial (gamma <x_i, x_j> + coef0)^degree.
// Pass 1: one work-item per row i walks every point j, adding k(x_i, x_j) to its cluster's sum
// in private memory (KMAX sums), writes its row of S into DIST and k(x_i, x_i) into NEWL_i
// (pass 2 reads it there before writing the label); neighbouring
// work-items read the same x_j at once. Pass 2: the work-group that finishes last (counted with
// an atomic in SYNC) computes the cluster sizes and terms z_c in local memory, then DIST and
// NEWL for every row (see kernel_kmeans.cpp's header), and resets SYNC to zero.
// OpenCL 1.2 orders global memory between work-groups only through atomics and fences as used
// here (the CUDA threadFenceReduction pattern); PoCL's CPU device keeps it.
//
// Parameters (all #defines):
//   WG  work-items per group      KMAX  the most clusters (private sums per work-item)
typedef kf_storage T;  // fp32

// b^p by p - 1 products (p = degree, 1..8).
inline float km_pow(float b, int p) {
  float k = b;
  for (int e = 1; e < p; ++e) k *= b;
  return k;
}

inline int km_label(__global const T* L, long j, int K) {
  const int c = (int)L[j];
  return c < 0 ? 0 : c >= K ? K - 1 : c;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void kernel_kmeans(
    __global const T* X, __global const T* L, __global T* DIST, __global T* NEWL, __global T* SYNC, int N, int D,
    int K, float gamma, float kind, float degree, float coef0) {
  const int i = get_global_id(0), lid = get_local_id(0);
  const int poly = kind != 0.0f, p = (int)degree;
  if (i < N) {  // no early return: every work-item reaches the barriers below
    float acc[KMAX];
    for (int c = 0; c < K; ++c) acc[c] = 0.0f;
    __global const T* x = X + (long)i * D;
    if (poly) {
      for (int j = 0; j < N; ++j) {
        __global const T* y = X + (long)j * D;
        float s = 0.0f;
        for (int d = 0; d < D; ++d) s += x[d] * y[d];
        acc[km_label(L, j, K)] += km_pow(s * gamma + coef0, p);
      }
    } else {
      for (int j = 0; j < N; ++j) {
        __global const T* y = X + (long)j * D;
        float d2 = 0.0f;
        for (int d = 0; d < D; ++d) d2 += (x[d] - y[d]) * (x[d] - y[d]);
        acc[km_label(L, j, K)] += exp(d2 * -gamma);
      }
    }
    for (int c = 0; c < K; ++c) DIST[(long)i * K + c] = acc[c];
    float self = 1.0f;  // k(x_i, x_i)
    if (poly) {
      float s = 0.0f;
      for (int d = 0; d < D; ++d) s += x[d] * x[d];
      self = km_pow(s * gamma + coef0, p);
    }
    NEWL[i] = self;
  }
  __local int last;
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (lid == 0) last = atomic_inc((volatile __global int*)SYNC) == (int)get_num_groups(0) - 1;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!last) return;  // the same for the whole group
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  __local float n[KMAX], z[KMAX];
  for (int c = lid; c < K; c += WG) {
    float nc = 0.0f, s = 0.0f;
    for (int r = 0; r < N; ++r)
      if (km_label(L, r, K) == c) nc += 1.0f, s += DIST[(long)r * K + c];
    n[c] = nc, z[c] = nc > 0.0f ? s / nc / nc : 0.0f;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int r = lid; r < N; r += WG) {
    __global T* row = DIST + (long)r * K;
    int best = 0;
    for (int c = 0; c < K; ++c) {
      row[c] = n[c] > 0.0f ? NEWL[r] - 2.0f * (row[c] / n[c]) + z[c] : FLT_MAX;
      if (row[c] < row[best]) best = c;  // strict: a tie keeps the lowest cluster
    }
    NEWL[r] = (float)best;
  }
  if (lid == 0) atomic_xchg((volatile __global int*)SYNC, 0);  // zero for the next launch
}
