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
// subnormals. No operation may underflow: on Zen 4 a product of two normal numbers that
// underflows takes a slow path, on the Xeon a scalef too, and the inputs' -1000s made every
// vector take it (the GELUs and SiLU ran at half speed on Zen 4, SiLU 40x slower on the Xeon).
// So GELU-tanh's exp argument stops at 87 (1 / (1 + e^87) is still normal), GELU-erf's at -70
// (its product with the erfc polynomial stays normal; both far below the bound's absolute
// error), and SiLU computes its tiny results apart (see silu below).
//
// Parameters (all #defines):
//   VW     SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
//   ROWS   rows per block
//   COLS   columns per block (a multiple of 16)
//   NT     1: non-temporal stores of Y (where aligned, when Y is 1 MiB or more), 0: plain stores
//   PF     prefetch X this many elements ahead of the loads (0: leave it to the hardware)
// The vector helpers (kf_vf, kf_load, kf_store_nt, kf_exp, ...) are the cpu prelude's.
typedef kf_vf vf;
typedef kf_storage T;

// Whole vectors of Y: streamed past the cache with NT = 1 when Y is large (`stream`).
static inline void put_v(T* p, vf v, bool stream) {
  if (NT && stream) kf_store_nt(p, v);
  else kf_store(p, v);
}

// Streaming stores pay off only for an output that would leave the caches anyway: a small Y
// (4 KiB) written past the cache, then fenced, took 3x the plain loop's time, and whoever reads
// it next wants it in the cache. Below 1 MiB (this CPU's L2 per core) Y is stored plainly.
constexpr long long kStreamMinBytes = 1 << 20;

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

// SiLU(z) = z sigmoid(z), sigmoid = 1/(1+e) (z >= 0) or e/(1+e) (z < 0) with e = exp(-|z|),
// which never overflows. e is taken at -|z| >= -86 only, where it is a normal number: below,
// 1 + e is 1 either way, and only z < -86 needs e's true size, for z e (the result: z e^z is
// normal down to -92, subnormal to -109, then 0). No operation may underflow for the common
// large inputs: on this Xeon a scalef or multiply that underflows, even to 0, takes a slow path
// for the whole vector (the -1000s of every 22nd element made silu 40x slower, 5.6 ns per
// element). So z < -86 gives -0 by a select, and vectors with a lane in [-112, -86), rare,
// recompute those lanes: z p 2^k from exp(z) = p 2^k, scaled once where normal, and where
// subnormal written as its bits (|z p| 2^(k+149) rounded to whole units of 2^-149 by adding
// 2^23): a subnormal output through scalef costs even more than the underflow.
static inline vf silu(vf z) {
  const vf e = kf_exp_clamped((vf)((kf_vi)z | (int)0x80000000));  // exp(max(-|z|, -86))
  const vf y = z * kf_rcp(1.0f + e);
  vf out = z < 0 ? y * e : y;
  out = z < -86.0f ? kf_splat(-0.0f) : out;
  const kf_vi far = (z < -86.0f) & (z >= -112.0f);
  if (kf_any(far)) {  // z e^z = zp 2^k; subnormal results built from their bits, no underflow
    vf k;
    const vf zp = z * kf_exp_reduced(kf_at_least(z, -112.0f), k);
    const vf units = (vf)((kf_vi)kf_scale2(zp, k + 149.0f) & 0x7fffffff);  // |result| / 2^-149
    const kf_vi sub = units < 8388608.0f;  // below 2^-126: subnormal (or 0)
    const vf big = kf_splat(8388608.0f);   // adding 2^23 rounds |result| to whole units
    const vf tiny = (vf)(((kf_vi)(units + big) - (kf_vi)big) | (int)0x80000000);
    // (scaled by 2^0 in the subnormal lanes, whose value the select drops: no underflow there)
    out = far ? (sub ? tiny : kf_scale2(zp, sub ? 0.0f : k)) : out;
  }
  return out;
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
  if constexpr (F == kSilu) return silu(z);
}

template <int F>
static void act_block(const kf_ctx& ctx, const T* X, const T* B, T* Y, int M, int N,
                      float with_bias, float slope) {
  const long long c0 = ctx.block_idx.x * (long long)COLS, r0 = ctx.block_idx.y * (long long)ROWS;
  const long long c1 = c0 + COLS < N ? c0 + COLS : N;
  const bool bias = with_bias != 0.0f;
  const bool stream = (long long)M * N * (long long)sizeof(T) >= kStreamMinBytes;
  for (long long i = r0; i < r0 + ROWS && i < M; ++i) {
    const T* x = X + i * N;
    T* y = Y + i * N;
    long long j = c0;
    for (; j + KF_VW <= c1; j += KF_VW) {
      if constexpr (PF > 0) __builtin_prefetch(x + j + PF);
      vf z = kf_load(x + j);
      if (bias) z += kf_load(B + j);
      put_v(y + j, act<F>(z, slope), stream);
    }
    if (j < c1) {
      const int n = (int)(c1 - j);
      vf z = kf_load_part(x + j, n, 0);
      if (bias) z += kf_load_part(B + j, n, 0);
      kf_store_part(y + j, n, act<F>(z, slope));
    }
  }
  if (NT && stream) kf_fence();
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
