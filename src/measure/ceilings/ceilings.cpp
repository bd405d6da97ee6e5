// Micro-benchmarks for the cpu backend's ceilings. peak: independent FMA chains at the widest
// SIMD the compiler targets (-march=native); one block per pool thread. triad: STREAM's
// a = b + s*c, split into contiguous chunks, one per block.
#if defined(__AVX512F__)
constexpr int kBytes = 64;
#else
constexpr int kBytes = 32;
#endif
constexpr int kChains = 12;  // enough independent FMAs to hide the latency on any x86 core

template <class T>
static void peak_body(const kf_ctx& ctx, T* out, int iters) {
  typedef T V __attribute__((vector_size(kBytes)));
  V acc[kChains];
  V m, a;
  for (int l = 0; l < kBytes / int(sizeof(T)); ++l) {
    m[l] = T(0.9999999);
    a[l] = T(1e-7);
  }
  for (int c = 0; c < kChains; ++c) acc[c] = m * T(c + 1);
  for (int i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * m + a;
    __asm__ volatile("" : "+x"(m));  // keeps the compiler from folding the chain
  }
  T s = 0;
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < kBytes / int(sizeof(T)); ++l) s += acc[c][l];
  out[ctx.block_idx.x] = s;
  if (ctx.block_idx.x == 0) out[ctx.grid_dim.x] = T(kBytes / int(sizeof(T)));  // lanes, for the host
}

static void peak32(const kf_ctx& ctx, float* out, int iters) { peak_body<float>(ctx, out, iters); }
static void peak64(const kf_ctx& ctx, double* out, int iters) { peak_body<double>(ctx, out, iters); }
KF_KERNEL(peak_fp32, peak32)
KF_KERNEL(peak_fp64, peak64)

static void triad_body(const kf_ctx& ctx, float* a, const float* b, const float* c, int n,
                       float s) {
  const long long chunk = (n + ctx.grid_dim.x - 1) / ctx.grid_dim.x;
  const long long lo = ctx.block_idx.x * chunk;
  const long long hi = lo + chunk < n ? lo + chunk : n;
  for (long long i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
}
KF_KERNEL(triad, triad_body)
