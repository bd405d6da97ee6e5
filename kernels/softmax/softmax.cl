// softmax for the opencl backend: Y = exp(X - rowmax) / rowsum, row-major (M,N), any M, N >= 1.
// One work-group per row. Its WG work-items walk the row in steps of WG*VEC (VEC adjacent
// elements each, so neighbours read neighbouring memory), looping as long as the row is:
// pass 1 the max, pass 2 the sum of exp(x - max), each combined across the group by a tree in
// local memory, pass 3 writes exp(x - max) / sum. The row is read three times; for rows that
// fit the cache the second and third reads come from it.
//
// Parameters (all #defines):
//   WG    work-items per group (a power of two)
//   VEC   adjacent elements per work-item and step (1, 2, 4, 8)
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout.

typedef kf_storage T;  // the dtype's storage type (the prelude's)

// The group's combination of one value per work-item (op: 0 max, 1 sum), in every work-item.
inline float group_reduce(float v, int op, __local float* red) {
  const int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] = op == 0 ? fmax(red[lid], red[lid + s]) : red[lid] + red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // red is reused by the next reduction
  return r;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax(__global const T* X, __global T* Y, int M, int N) {
  __local float red[WG];
  const int lid = get_local_id(0);
  const long row = get_group_id(0);
  __global const T* x = X + row * N;
  __global T* y = Y + row * N;

  float m = -INFINITY;
  for (int j = lid * VEC; j < N; j += WG * VEC)
    for (int e = 0; e < VEC && j + e < N; ++e) m = fmax(m, kf_load(x + j + e));
  m = group_reduce(m, 0, red);

  float s = 0.0f;
  for (int j = lid * VEC; j < N; j += WG * VEC)
    for (int e = 0; e < VEC && j + e < N; ++e) s += exp(kf_load(x + j + e) - m);
  const float inv = 1.0f / group_reduce(s, 1, red);

  for (int j = lid * VEC; j < N; j += WG * VEC)
    for (int e = 0; e < VEC && j + e < N; ++e) kf_store(exp(kf_load(x + j + e) - m) * inv, y + j + e);
}
