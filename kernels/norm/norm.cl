// rmsnorm and layernorm for the opencl backend (two kernels, one body), row-major (M,N):
//   rmsnorm:   Y = X / sqrt(mean(X^2) + eps) * gamma
//   layernorm: Y = (X - mean) / sqrt(var + eps) * gamma + beta
// One work-group per row; its WG work-items walk the row in steps of WG*VEC (VEC adjacent
// elements each), looping as long as the row is. layernorm is two-pass (the mean, then the
// sum of squared deviations from it: stable where E[x^2] - E[x]^2 cancels); each sum is
// combined across the group by a tree in local memory. The last pass writes the output.
//
// Parameters (all #defines):
//   WG    work-items per group (a power of two)
//   VEC   adjacent elements per work-item and step (1, 2, 4, 8)
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout.

typedef kf_storage T;  // the dtype's storage type (the prelude's)

// The group's sum of one value per work-item, in every work-item.
inline float group_sum(float v, __local float* red) {
  const int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // red is reused by the next reduction
  return r;
}

inline void norm_row(__global const T* X, __global const T* G, __global const T* B,
                     __global T* Y, int N, float eps, int centered, __local float* red) {
  const int lid = get_local_id(0);
  const long row = get_group_id(0);
  __global const T* x = X + row * N;
  __global T* y = Y + row * N;

  float mean = 0.0f;
  if (centered) {
    float s = 0.0f;
    for (int j = lid * VEC; j < N; j += WG * VEC)
      for (int e = 0; e < VEC && j + e < N; ++e) s += kf_load(x + j + e);
    mean = group_sum(s, red) / N;
  }
  float s2 = 0.0f;
  for (int j = lid * VEC; j < N; j += WG * VEC)
    for (int e = 0; e < VEC && j + e < N; ++e) {
      const float d = kf_load(x + j + e) - mean;
      s2 += d * d;
    }
  const float inv = 1.0f / sqrt(group_sum(s2, red) / N + eps);

  for (int j = lid * VEC; j < N; j += WG * VEC)
    for (int e = 0; e < VEC && j + e < N; ++e) {
      float v = (kf_load(x + j + e) - mean) * inv * kf_load(G + j + e);
      if (centered) v += kf_load(B + j + e);
      kf_store(v, y + j + e);
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rmsnorm(__global const T* X, __global const T* G, __global T* Y, int M, int N, float eps) {
  __local float red[WG];
  norm_row(X, G, G, Y, N, eps, 0, red);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void layernorm(__global const T* X, __global const T* G, __global const T* B, __global T* Y,
               int M, int N, float eps) {
  __local float red[WG];
  norm_row(X, G, B, Y, N, eps, 1, red);
}
