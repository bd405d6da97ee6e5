// column_dots: one pass over a's columns, each dotted with up to 8 columns of x at once (x, a few
// columns of n floats, stays in L1/L2), so a is read once for every 8 right-hand sides and never
// copied. U B is column_dots on U's transpose (kept by the caller), U^T G on U itself.
#include "kmodel/skinny_products.hpp"

#include <algorithm>

#include <cblas.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KFORGE_SKINNY_AVX2 1
#endif

namespace kforge::kmodel::skinny {
namespace {

#ifdef KFORGE_SKINNY_AVX2
__attribute__((target("avx2,fma"))) inline float horizontal_sum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// M (1..8) right-hand sides at once: M accumulators of 8 lanes per column of a.
template <int M>
__attribute__((target("avx2,fma"))) void dots_avx2(const float* a, std::ptrdiff_t len, std::ptrdiff_t cols,
                                                   std::ptrdiff_t lda, const float* x, std::ptrdiff_t ldx,
                                                   float* out, std::ptrdiff_t ldo) {
  const std::ptrdiff_t body = len - len % 8;
  for (std::ptrdiff_t c = 0; c < cols; ++c) {
    const float* ac = a + c * lda;
    __m256 acc[M];
    for (int j = 0; j < M; ++j) acc[j] = _mm256_setzero_ps();
    for (std::ptrdiff_t i = 0; i < body; i += 8) {
      const __m256 av = _mm256_loadu_ps(ac + i);
      for (int j = 0; j < M; ++j) acc[j] = _mm256_fmadd_ps(av, _mm256_loadu_ps(x + j * ldx + i), acc[j]);
    }
    for (int j = 0; j < M; ++j) {
      float s = horizontal_sum(acc[j]);
      for (std::ptrdiff_t i = body; i < len; ++i) s += ac[i] * x[j * ldx + i];
      out[j * ldo + c] = s;
    }
  }
}

__attribute__((target("avx2,fma"))) inline double horizontal_sum(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// The same in double, 4 lanes.
template <int M>
__attribute__((target("avx2,fma"))) void dots_avx2_d(const double* a, std::ptrdiff_t len, std::ptrdiff_t cols,
                                                     std::ptrdiff_t lda, const double* x, std::ptrdiff_t ldx,
                                                     double* out, std::ptrdiff_t ldo) {
  const std::ptrdiff_t body = len - len % 4;
  for (std::ptrdiff_t c = 0; c < cols; ++c) {
    const double* ac = a + c * lda;
    __m256d acc[M];
    for (int j = 0; j < M; ++j) acc[j] = _mm256_setzero_pd();
    for (std::ptrdiff_t i = 0; i < body; i += 4) {
      const __m256d av = _mm256_loadu_pd(ac + i);
      for (int j = 0; j < M; ++j) acc[j] = _mm256_fmadd_pd(av, _mm256_loadu_pd(x + j * ldx + i), acc[j]);
    }
    for (int j = 0; j < M; ++j) {
      double s = horizontal_sum(acc[j]);
      for (std::ptrdiff_t i = body; i < len; ++i) s += ac[i] * x[j * ldx + i];
      out[j * ldo + c] = s;
    }
  }
}

using DotsFnD = void (*)(const double*, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t, const double*, std::ptrdiff_t,
                         double*, std::ptrdiff_t);
constexpr DotsFnD kDotsD[8] = {dots_avx2_d<1>, dots_avx2_d<2>, dots_avx2_d<3>, dots_avx2_d<4>,
                               dots_avx2_d<5>, dots_avx2_d<6>, dots_avx2_d<7>, dots_avx2_d<8>};

using DotsFn = void (*)(const float*, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t, const float*, std::ptrdiff_t,
                        float*, std::ptrdiff_t);
constexpr DotsFn kDots[8] = {dots_avx2<1>, dots_avx2<2>, dots_avx2<3>, dots_avx2<4>,
                             dots_avx2<5>, dots_avx2<6>, dots_avx2<7>, dots_avx2<8>};

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#endif

}  // namespace

void column_dots(const float* a, std::ptrdiff_t len, std::ptrdiff_t cols, std::ptrdiff_t lda, const float* x,
                 std::ptrdiff_t ldx, std::ptrdiff_t m, float* out, std::ptrdiff_t ldo) {
  if (cols <= 0 || m <= 0) return;
#ifdef KFORGE_SKINNY_AVX2
  if (have_avx2()) {
    for (std::ptrdiff_t j = 0; j < m; j += 8) {
      const std::ptrdiff_t mj = std::min<std::ptrdiff_t>(8, m - j);
      kDots[mj - 1](a, len, cols, lda, x + j * ldx, ldx, out + j * ldo, ldo);
    }
    return;
  }
#endif
  cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<blasint>(cols), static_cast<blasint>(m),
              static_cast<blasint>(len), 1.0F, a, static_cast<blasint>(lda), x, static_cast<blasint>(ldx), 0.0F, out,
              static_cast<blasint>(ldo));
}

void column_dots(const double* a, std::ptrdiff_t len, std::ptrdiff_t cols, std::ptrdiff_t lda, const double* x,
                 std::ptrdiff_t ldx, std::ptrdiff_t m, double* out, std::ptrdiff_t ldo) {
  if (cols <= 0 || m <= 0) return;
#ifdef KFORGE_SKINNY_AVX2
  if (have_avx2()) {
    for (std::ptrdiff_t j = 0; j < m; j += 8) {
      const std::ptrdiff_t mj = std::min<std::ptrdiff_t>(8, m - j);
      kDotsD[mj - 1](a, len, cols, lda, x + j * ldx, ldx, out + j * ldo, ldo);
    }
    return;
  }
#endif
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<blasint>(cols), static_cast<blasint>(m),
              static_cast<blasint>(len), 1.0, a, static_cast<blasint>(lda), x, static_cast<blasint>(ldx), 0.0, out,
              static_cast<blasint>(ldo));
}

}  // namespace kforge::kmodel::skinny
