// activations for the cpu backend: Y = f(X + bias), elementwise over X, Y (M,N) row-major, the
// bias (length N) added when with_bias != 0. One entry per function (relu, leaky_relu,
// gelu_erf, gelu_tanh, silu), one body. Each block owns a ROWS x COLS tile (so one long row is
// shared by ceil(N/COLS) blocks: every thread has work); it streams the tile row by row in
// VW-float SIMD vectors, the row's tail as a masked vector.
//
// The transcendental functions are SIMD too: exp by Cody-Waite reduction and a polynomial,
// erfc by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7), and GELU's tanh form through the
// identity (1 + tanh(a)) / 2 = sigmoid(2a) = 1 / (1 + exp(-2a)), which never cancels. SiLU's
// sigmoid takes exp(-|z|), which never overflows (z / (1 + exp(-z)) is -0 below z = -88.7,
// where the true value is still a normal number).
//
// Parameters (all #defines):
//   VW     SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   ROWS   rows per block
//   COLS   columns per block (a multiple of 16)
//   NT     1: non-temporal stores of Y (where aligned), 0: plain stores
#include <cstring>

#if VW == 0
#undef VW
#if defined(__AVX512F__)
#define VW 16
#else
#define VW 8
#endif
#endif

typedef float vf __attribute__((vector_size(VW * 4)));
typedef int vi __attribute__((vector_size(VW * 4)));

// --- storage type T and VW-wide conversions to fp32 ---------------------------------------
#if defined(KF_DTYPE_FP16)
typedef unsigned short T;
typedef _Float16 vh __attribute__((vector_size(VW * 2), aligned(2)));
static inline vf load_v(const T* p) { return __builtin_convertvector(*(const vh*)p, vf); }
static inline void store_v(T* p, vf v) { *(vh*)p = __builtin_convertvector(v, vh); }
static inline float to_f32(T h) { return (float)__builtin_bit_cast(_Float16, h); }
#elif defined(KF_DTYPE_BF16)
typedef unsigned short T;
typedef unsigned short vu16 __attribute__((vector_size(VW * 2), aligned(2)));
typedef unsigned vu32 __attribute__((vector_size(VW * 4)));
static inline vf load_v(const T* p) {
  return (vf)(__builtin_convertvector(*(const vu16*)p, vu32) << 16);
}
static inline void store_v(T* p, vf v) {  // round to nearest even; NaN stays NaN
  const vu32 x = (vu32)v;
  const vu32 rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const vu32 quiet = (x >> 16) | 0x40u;
  *(vu16*)p = __builtin_convertvector((x & 0x7fffffffu) > 0x7f800000u ? quiet : rounded, vu16);
}
static inline float to_f32(T b) { return __builtin_bit_cast(float, (unsigned)b << 16); }
#else
typedef float T;
typedef float vf_unaligned __attribute__((vector_size(VW * 4), aligned(4)));
static inline vf load_v(const T* p) { return *(const vf_unaligned*)p; }
static inline void store_v(T* p, vf v) { *(vf_unaligned*)p = v; }
static inline float to_f32(T f) { return f; }
#endif

// Stores of whole vectors: with NT = 1, non-temporal where the address is aligned (the
// output goes to memory without first reading its lines into the cache: a third less
// traffic for a streaming kernel), plain otherwise. A block ends with fence() so its
// non-temporal stores are visible before the launch returns.
#if NT
#include <immintrin.h>
static inline void put_v(T* p, vf v) {
  constexpr int kB = VW * (int)sizeof(T);
  if (((unsigned long long)p & (kB - 1)) != 0) return store_v(p, v);
  T tmp[VW] __attribute__((aligned(64)));
  store_v(tmp, v);
#if defined(__AVX512F__)
  if constexpr (kB == 64) return _mm512_stream_si512((__m512i*)p, _mm512_load_si512(tmp));
#endif
  if constexpr (kB % 32 == 0) {
    for (int o = 0; o < kB; o += 32)
      _mm256_stream_si256((__m256i*)((char*)p + o), _mm256_load_si256((const __m256i*)((char*)tmp + o)));
    return;
  }
  for (int o = 0; o < kB; o += 16)
    _mm_stream_si128((__m128i*)((char*)p + o), _mm_load_si128((const __m128i*)((char*)tmp + o)));
}
static inline void fence() { _mm_sfence(); }
#else
static inline void put_v(T* p, vf v) { store_v(p, v); }
static inline void fence() {}
#endif

static inline vf load_part(const T* p, int n) {
  vf v = {};
  for (int e = 0; e < n; ++e) v[e] = to_f32(p[e]);
  return v;
}
static inline void store_part(T* p, int n, vf v) {
  T tmp[VW];
  store_v(tmp, v);
  std::memcpy(p, tmp, n * sizeof(T));
}
static inline vf splat(float f) { return (vf){} + f; }

// exp(x) within ~2 ulp: x = k*ln2 + r, |r| <= ln2/2 (ln2's high part has 9 bits, so k*ln2_hi is
// exact), a degree-7 Taylor polynomial for e^r, and 2^k as two normal factors (subnormal
// results included). x < -104 gives 0 (-inf too), x > 89 gives inf.
static inline vf vexp(vf x) {
  x = x < -104.0f ? splat(-104.0f) : x;
  x = x > 89.0f ? splat(89.0f) : x;
  const vf magic = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const vf k = (x * 1.44269504f + magic) - magic;
  const vf r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  vf p = splat(1.0f / 5040);
  p = p * r + (1.0f / 720);
  p = p * r + (1.0f / 120);
  p = p * r + (1.0f / 24);
  p = p * r + (1.0f / 6);
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const vi ki = __builtin_convertvector(k, vi);
  const vi k1 = ki >> 1, k2 = ki - k1;
  return p * (vf)((k1 + 127) << 23) * (vf)((k2 + 127) << 23);
}

// Phi(z) = erfc(-z/sqrt 2) / 2, erfc(t) for t >= 0 by A&S 7.1.26.
static inline vf normal_cdf(vf z) {
  const vf t = (z < 0 ? -z : z) * 0.70710678f;
  const vf s = 1.0f / (1.0f + 0.3275911f * t);
  vf p = splat(1.061405429f);
  p = p * s - 1.453152027f;
  p = p * s + 1.421413741f;
  p = p * s - 0.284496736f;
  p = p * s + 0.254829592f;
  const vf half_erfc = 0.5f * p * s * vexp(-(t * t));
  return z < 0 ? half_erfc : 1.0f - half_erfc;
}

enum Fn { kRelu, kLeaky, kGeluErf, kGeluTanh, kSilu };

template <int F>
static inline vf act(vf z, float slope) {
  if constexpr (F == kRelu) return z > 0 ? z : splat(0.0f);
  if constexpr (F == kLeaky) return z > 0 ? z : z * slope;
  if constexpr (F == kGeluErf) return z * normal_cdf(z);
  if constexpr (F == kGeluTanh) {
    const vf a = 0.7978845608f * (z + 0.044715f * z * z * z);
    return z / (1.0f + vexp(-2.0f * a));
  }
  if constexpr (F == kSilu) {  // e = exp(-|z|) never overflows: sigmoid = 1/(1+e) or e/(1+e)
    const vf e = vexp(z < 0 ? z : -z);
    return z * (z < 0 ? e : splat(1.0f)) / (1.0f + e);
  }
}

template <int F>
static void act_block(const kf_ctx& ctx, const T* X, const T* B, T* Y, int M, int N,
                      float with_bias, float slope) {
  const long long c0 = ctx.block_idx.x * (long long)COLS, r0 = ctx.block_idx.y * (long long)ROWS;
  const long long c1 = c0 + COLS < N ? c0 + COLS : N;
  const bool bias = with_bias != 0.0f;
  for (long long i = r0; i < r0 + ROWS && i < M; ++i) {
    const T* x = X + i * N;
    T* y = Y + i * N;
    long long j = c0;
    for (; j + VW <= c1; j += VW) {
      vf z = load_v(x + j);
      if (bias) z += load_v(B + j);
      put_v(y + j, act<F>(z, slope));
    }
    if (j < c1) {
      const int n = (int)(c1 - j);
      vf z = load_part(x + j, n);
      if (bias) z += load_part(B + j, n);
      store_part(y + j, n, act<F>(z, slope));
    }
  }
  fence();
}

#define KF_ACTIVATION(name, F)                                                               \
  static void name##_block(const kf_ctx& c, const T* X, const T* B, T* Y, int M, int N,     \
                           float with_bias) {                                               \
    act_block<F>(c, X, B, Y, M, N, with_bias, 0.0f);                                        \
  }                                                                                         \
  KF_KERNEL(name, name##_block)

KF_ACTIVATION(relu, kRelu)
KF_ACTIVATION(gelu_erf, kGeluErf)
KF_ACTIVATION(gelu_tanh, kGeluTanh)
KF_ACTIVATION(silu, kSilu)

static void leaky_relu_block(const kf_ctx& c, const T* X, const T* B, T* Y, int M, int N,
                             float with_bias, float slope) {
  act_block<kLeaky>(c, X, B, Y, M, N, with_bias, slope);
}
KF_KERNEL(leaky_relu, leaky_relu_block)
