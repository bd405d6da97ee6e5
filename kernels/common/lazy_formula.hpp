// What the lazy-reduction kernels (lazy_reduce.cpp, lazy_grad.cpp) share, included by them
// (kforge expands it: src/backend/kernel_includes.hpp): the functions the emitted formula calls,
// on vectors of KF_VW pairs, and the pair terms of one point with a tile of points.
// Needs TJ (points per tile) defined.
#include <math.h>

typedef kf_storage T;  // fp32
typedef kf_vf vf;

// The emitted formula is C over floats; called on vectors of KF_VW pairs it finds these
// overloads: exp by the prelude's kf_exp (~1 ulp, vectorized), the rarer functions lane by lane.
static inline vf expf(vf x) { return kf_exp(x); }
static inline vf fabsf(vf x) { return (vf)((kf_vi)x & 0x7fffffff); }
static inline vf lz_vec(vf x) { return x; }
static inline vf lz_vec(float x) { return kf_splat(x); }
#define LZ_LANES(name, expr)                                                            \
  static inline vf name(vf x) {                                                         \
    vf r;                                                                               \
    for (int e = 0; e < KF_VW; ++e) r[e] = expr;                                        \
    return r;                                                                           \
  }
LZ_LANES(logf, __builtin_logf(x[e]))
LZ_LANES(sqrtf, __builtin_sqrtf(x[e]))
#define LZ_LANES2(name, expr)                                                           \
  template <class A, class B>                                                           \
  static inline vf name(A a, B b) {                                                     \
    const vf x = lz_vec(a), y = lz_vec(b);                                              \
    vf r;                                                                               \
    for (int e = 0; e < KF_VW; ++e) r[e] = expr;                                        \
    return r;                                                                           \
  }
LZ_LANES2(powf, __builtin_powf(x[e], y[e]))
LZ_LANES2(fminf, __builtin_fminf(x[e], y[e]))
LZ_LANES2(fmaxf, __builtin_fmaxf(x[e], y[e]))

// t[j] = the pair term of x with each of the tile's points (yt: D rows of TJ): 0 the squared
// distance, 1 the dot product.
static inline void lz_term(int kind, const float* x, const float* yt, int D, float* t) {
  for (int j = 0; j < TJ; ++j) t[j] = 0.0f;
  for (int d = 0; d < D; ++d) {
    const float xv = x[d];
    const float* y = yt + (long long)d * TJ;
    if (kind == 0)
      for (int j = 0; j < TJ; ++j) t[j] += (xv - y[j]) * (xv - y[j]);
    else
      for (int j = 0; j < TJ; ++j) t[j] += xv * y[j];
  }
}
