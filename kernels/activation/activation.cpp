// activations for the cpu backend: Y = f(X + bias), elementwise over X, Y (M,N) row-major, the
// bias (length N) added when with_bias != 0. One entry per function (relu, leaky_relu,
// gelu_erf, gelu_tanh, silu), one body. Each block owns a ROWS x COLS tile (so one long row is
// shared by ceil(N/COLS) blocks: every thread has work); it streams the tile row by row in
// VW-float SIMD vectors, the row's tail as a masked vector.
//
// The transcendental functions are SIMD too, and cheap enough that two cores keep up with
// memory: the prelude's kf_exp (Cody-Waite reduction, a degree-6 polynomial, p * 2^k by scalef)
// and kf_rcp (a 14-bit estimate and one Newton step instead of a division). GELU-erf is
// max(z, 0) - |z| erfc(|z|/sqrt 2)/2 with erfc by Abramowitz & Stegun 7.1.26 (|error| <=
// 1.5e-7); GELU-tanh goes through (1 + tanh(a)) / 2 = 1 / (1 + exp(-2a)), which never cancels.
// The GELUs' bounds allow an absolute error of a few ulps of |z|, so their exps never return
// subnormals. SiLU's sigmoid takes exp(-|z|), which never overflows (z / (1 + exp(-z)) is -0
// below z = -88.7, where the true value is still a normal number), with kf_exp's subnormals.
// No product of two normal numbers may underflow: on Zen 4 each such multiply takes a slow path,
// and the inputs' -1000s made every vector take it (the GELUs and SiLU ran at half speed). So
// GELU-tanh's exp argument stops at 87 (1 / (1 + e^87) is still normal), GELU-erf's at -70
// (its product with the erfc polynomial stays normal; both far below the bound's absolute
// error), and kf_exp builds SiLU's subnormals with scalef, which has no slow path.
//
// Parameters (all #defines):
//   VW     SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   ROWS   rows per block
//   COLS   columns per block (a multiple of 16)
//   NT     1: non-temporal stores of Y (where aligned), 0: plain stores
//   PF     prefetch X this many elements ahead of the loads (0: leave it to the hardware)
// The vector helpers (kf_vf, kf_load, kf_store_nt, kf_exp, ...) are the cpu prelude's.
typedef kf_vf vf;
typedef kf_storage T;

// Whole vectors of Y: streamed past the cache with NT = 1.
static inline void put_v(T* p, vf v) {
  if constexpr (NT) kf_store_nt(p, v);
  else kf_store(p, v);
}

// GELU(z) = z Phi(z) = max(z, 0) - |z| h, h = erfc(|z|/sqrt 2) / 2 (z < 0: z h; z >= 0:
// z (1 - h), one FMA): no compare and no blend. erfc(t), t >= 0, by A&S 7.1.26 with the 1/2
// folded into its coefficients and 1/sqrt 2 into 0.3275911.
static inline vf gelu_erf(vf z) {
  const vf a = (vf)((kf_vi)z & 0x7fffffff);  // |z|
  const vf s = kf_rcp(1.0f + 0.2316418877f * a);
  vf p = kf_splat(0.5307027145f);
  p = p * s - 0.7265760135f;
  p = p * s + 0.7107068705f;
  p = p * s - 0.142248368f;
  p = p * s + 0.127414796f;
  vf k;  // exp(-z^2/2), stopped at exp(-70): every product stays normal (see the header)
  const vf e = kf_exp_reduced(kf_at_least(z * z * -0.5f, -70.0f), k);
  return kf_at_least(z, 0.0f) - a * (p * s * kf_scale2(e, k));
}

enum Fn { kRelu, kLeaky, kGeluErf, kGeluTanh, kSilu };

template <int F>
static inline vf act(vf z, float slope) {
  if constexpr (F == kRelu) return z > 0 ? z : kf_splat(0.0f);
  if constexpr (F == kLeaky) return z > 0 ? z : z * slope;
  if constexpr (F == kGeluErf) return gelu_erf(z);
  if constexpr (F == kGeluTanh) {
    const vf a = -1.5957691216f * (z + 0.044715f * z * z * z);  // -2 * sqrt(2/pi) * (...)
    return z * kf_rcp(1.0f + kf_exp_clamped(kf_at_most(a, 87.0f)));  // see the header
  }
  if constexpr (F == kSilu) {  // e = exp(-|z|) never overflows: sigmoid = 1/(1+e) or e/(1+e)
    const vf e = kf_exp((vf)((kf_vi)z | (int)0x80000000));  // -|z|
    const vf y = z * kf_rcp(1.0f + e);
    return z < 0 ? y * e : y;
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
    for (; j + KF_VW <= c1; j += KF_VW) {
      if constexpr (PF > 0) __builtin_prefetch(x + j + PF);
      vf z = kf_load(x + j);
      if (bias) z += kf_load(B + j);
      put_v(y + j, act<F>(z, slope));
    }
    if (j < c1) {
      const int n = (int)(c1 - j);
      vf z = kf_load_part(x + j, n, 0);
      if (bias) z += kf_load_part(B + j, n, 0);
      kf_store_part(y + j, n, act<F>(z, slope));
    }
  }
  kf_fence();
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
