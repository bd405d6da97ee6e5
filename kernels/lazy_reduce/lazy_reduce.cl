// Lazy reductions for the opencl backend: f(x_i, y_j) reduced over j, never an N x M buffer.
// The formula arrives as #defines in front of this template (see lazy_reduce.cpp's header for
// their meaning). One work-item per row i walks every point j, the pair terms over the D
// coordinates first, then the formula and the reduction state in private memory; neighbouring
// work-items read the same y_j at once (one cache line serves the work-group).
//
// Parameters (all #defines):
//   WG  work-items per group
#ifndef LZ_REDUCE
#define LZ_REDUCE 0
#define LZ_NTERMS 1
#define LZ_TERM0 0
#define LZ_TERM1 0
#define LZ_F(t0, t1) (expf((-(t0)) / s))
#define LZ_SCALAR_PARAMS , float s
#endif
// The C names the emitted formula uses, as OpenCL C's overloaded builtins.
#define expf exp
#define logf log
#define sqrtf sqrt
#define powf pow
#define fabsf fabs
#define fminf fmin
#define fmaxf fmax

typedef kf_storage T;  // fp32

inline float lz_term(int kind, __global const T* x, __global const T* y, int D) {
  float t = 0.0f;
  for (int d = 0; d < D; ++d) t += kind == 0 ? (x[d] - y[d]) * (x[d] - y[d]) : x[d] * y[d];
  return t;
}

#if LZ_REDUCE == 0
#define LZ_ARGS __global const T* X, __global const T* Y, __global const T* B, __global T* OUT, int N, int M, int D, int E
#elif LZ_REDUCE == 4
#define LZ_ARGS __global const T* X, __global const T* Y, __global T* DIST, __global T* IDX, int N, int M, int D, int K
#else
#define LZ_ARGS __global const T* X, __global const T* Y, __global T* OUT, int N, int M, int D
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void lazy_reduce(LZ_ARGS LZ_SCALAR_PARAMS) {
  const int i = get_global_id(0);
  if (i >= N) return;
  __global const T* x = X + (long)i * D;
#if LZ_REDUCE == 0
  // E sums, one pass over j per weight column (E is small; the pairs are recomputed).
  for (int e = 0; e < E; ++e) {
    float acc = 0.0f;
    for (int j = 0; j < M; ++j) {
      __global const T* y = Y + (long)j * D;
      const float t0 = lz_term(LZ_TERM0, x, y, D);
      const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, x, y, D) : 0.0f;
      acc += LZ_F(t0, t1) * B[(long)j * E + e];
    }
    OUT[(long)i * E + e] = acc;
  }
#else
  float mx = -INFINITY, sm = 0.0f, best = INFINITY;
  int at = 0;
#if LZ_REDUCE == 4
  float kd[64];
  int ki[64];
  for (int k = 0; k < K; ++k) kd[k] = INFINITY, ki[k] = -1;
#endif
  for (int j = 0; j < M; ++j) {
    __global const T* y = Y + (long)j * D;
    const float t0 = lz_term(LZ_TERM0, x, y, D);
    const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, x, y, D) : 0.0f;
    const float f = LZ_F(t0, t1);
#if LZ_REDUCE == 1
    if (f > mx) sm = sm * exp(mx - f), mx = f;  // the running max: rescale the sum to it
    if (mx > -INFINITY) sm += exp(f - mx);
#elif LZ_REDUCE == 2 || LZ_REDUCE == 3
    if (f < best) best = f, at = j;  // strict: a tie keeps the first index
#else
    if (f < kd[K - 1]) {
      int p = K - 1;
      while (p > 0 && kd[p - 1] > f) kd[p] = kd[p - 1], ki[p] = ki[p - 1], --p;
      kd[p] = f, ki[p] = j;
    }
#endif
  }
#if LZ_REDUCE == 1
  OUT[i] = mx + log(sm);
#elif LZ_REDUCE == 2
  OUT[i] = best;
#elif LZ_REDUCE == 3
  OUT[i] = (float)at;
#else
  for (int k = 0; k < K; ++k) DIST[(long)i * K + k] = kd[k], IDX[(long)i * K + k] = (float)ki[k];
#endif
#endif
}
