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
#define KFORGE_AVX2 __attribute__((target("avx2,fma")))

// The 8-lane float and 4-lane double vectors behind one loop (dots_avx2).
struct Floats {
  using T = float;
  using V = __m256;
  static constexpr int kWidth = 8;
  KFORGE_AVX2 static V zero() { return _mm256_setzero_ps(); }
  KFORGE_AVX2 static V load(const T* p) { return _mm256_loadu_ps(p); }
  KFORGE_AVX2 static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  KFORGE_AVX2 static T sum(V v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
  }
};
struct Doubles {
  using T = double;
  using V = __m256d;
  static constexpr int kWidth = 4;
  KFORGE_AVX2 static V zero() { return _mm256_setzero_pd(); }
  KFORGE_AVX2 static V load(const T* p) { return _mm256_loadu_pd(p); }
  KFORGE_AVX2 static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  KFORGE_AVX2 static T sum(V v) {
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }
};

// M (1..8) right-hand sides at once: M vector accumulators per column of a.
template <class L, int M>
KFORGE_AVX2 void dots_avx2(const typename L::T* a, std::ptrdiff_t len, std::ptrdiff_t cols, std::ptrdiff_t lda,
                           const typename L::T* x, std::ptrdiff_t ldx, typename L::T* out, std::ptrdiff_t ldo) {
  const std::ptrdiff_t body = len - len % L::kWidth;
  for (std::ptrdiff_t c = 0; c < cols; ++c) {
    const typename L::T* ac = a + c * lda;
    typename L::V acc[M];
    for (int j = 0; j < M; ++j) acc[j] = L::zero();
    for (std::ptrdiff_t i = 0; i < body; i += L::kWidth) {
      const typename L::V av = L::load(ac + i);
      for (int j = 0; j < M; ++j) acc[j] = L::fma(av, L::load(x + j * ldx + i), acc[j]);
    }
    for (int j = 0; j < M; ++j) {
      typename L::T s = L::sum(acc[j]);
      for (std::ptrdiff_t i = body; i < len; ++i) s += ac[i] * x[j * ldx + i];
      out[j * ldo + c] = s;
    }
  }
}

template <class L>
using DotsFn = void (*)(const typename L::T*, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t, const typename L::T*,
                        std::ptrdiff_t, typename L::T*, std::ptrdiff_t);
template <class L>
constexpr DotsFn<L> kDots[8] = {dots_avx2<L, 1>, dots_avx2<L, 2>, dots_avx2<L, 3>, dots_avx2<L, 4>,
                                dots_avx2<L, 5>, dots_avx2<L, 6>, dots_avx2<L, 7>, dots_avx2<L, 8>};

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
      kDots<Floats>[mj - 1](a, len, cols, lda, x + j * ldx, ldx, out + j * ldo, ldo);
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
      kDots<Doubles>[mj - 1](a, len, cols, lda, x + j * ldx, ldx, out + j * ldo, ldo);
    }
    return;
  }
#endif
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<blasint>(cols), static_cast<blasint>(m),
              static_cast<blasint>(len), 1.0, a, static_cast<blasint>(lda), x, static_cast<blasint>(ldx), 0.0, out,
              static_cast<blasint>(ldo));
}

}  // namespace kforge::kmodel::skinny
