// sum, max and argmax along either axis for the opencl backend, X (M,N) row-major, any M, N.
// Six kernels, <op>_axis1 (each row, Y (M)) and <op>_axis0 (each column, Y (N)).
// axis 1: one work-group per row; its WG work-items stride the row (looping as long as it is)
// and combine their partials by a tree in local memory. axis 0: one work-item per column,
// walking down the rows; neighbouring work-items read neighbouring columns (coalesced).
// argmax keeps the first maximum: ties go to the smaller index, as numpy's argmax.
//
// Parameters (all #defines):
//   WG    work-items per group (a power of two)
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout.

typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define SUM 0
#define MAX 1
#define ARGMAX 2

// (v, at) <- the combination of (v, at) and (w, wat).
inline void combine(int op, float* v, int* at, float w, int wat) {
  if (op == SUM) *v += w;
  else if (w > *v || (w == *v && wat < *at)) *v = w, *at = wat;
}

inline void reduce_row(__global const T* X, __global T* Y, int N, int op, __local float* lv,
                       __local int* lat) {
  const int lid = get_local_id(0);
  const long row = get_group_id(0);
  float v = op == SUM ? 0.0f : -INFINITY;
  int at = 0x7fffffff;
  for (int j = lid; j < N; j += WG) combine(op, &v, &at, kf_load(X + row * N + j), j);
  lv[lid] = v;
  lat[lid] = at;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) {
      float a = lv[lid];
      int ai = lat[lid];
      combine(op, &a, &ai, lv[lid + s], lat[lid + s]);
      lv[lid] = a;
      lat[lid] = ai;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) kf_store(op == ARGMAX ? (float)lat[0] : lv[0], Y + row);
}

inline void reduce_col(__global const T* X, __global T* Y, int M, int N, int op) {
  const int col = get_global_id(0);
  if (col >= N) return;
  float v = op == SUM ? 0.0f : -INFINITY;
  int at = 0x7fffffff;
  for (int i = 0; i < M; ++i) combine(op, &v, &at, kf_load(X + (long)i * N + col), i);
  kf_store(op == ARGMAX ? (float)at : v, Y + col);
}

#define KF_REDUCE(op, OP)                                                                    \
  __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                                  \
  void op##_axis1(__global const T* X, __global T* Y, int M, int N) {                       \
    __local float lv[WG];                                                                   \
    __local int lat[WG];                                                                    \
    reduce_row(X, Y, N, OP, lv, lat);                                                       \
  }                                                                                         \
  __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                                  \
  void op##_axis0(__global const T* X, __global T* Y, int M, int N) {                       \
    reduce_col(X, Y, M, N, OP);                                                             \
  }

KF_REDUCE(sum, SUM)
KF_REDUCE(max, MAX)
KF_REDUCE(argmax, ARGMAX)
