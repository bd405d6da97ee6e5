// column_dots: one pass over a's columns, each dotted with up to 8 columns of x at once (x, a few
// columns of n floats, stays in L1/L2), so a is read once for every 8 right-hand sides and never
// copied. U B is column_dots on U's transpose (kept by the caller), U^T G on U itself.
#include "kmodel/skinny_products.hpp"

#include <algorithm>
#include <atomic>
#include <type_traits>

#include <cblas.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KFORGE_SKINNY_AVX2 1
#endif

namespace kforge::kmodel::skinny {
namespace {

std::atomic<bool> portable_only{false};  // force_portable (tests)

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
  KFORGE_AVX2 static V broadcast(const T* p) { return _mm256_broadcast_ss(p); }
  KFORGE_AVX2 static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
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
  KFORGE_AVX2 static V broadcast(const T* p) { return _mm256_broadcast_sd(p); }
  KFORGE_AVX2 static void store(T* p, V v) { _mm256_storeu_pd(p, v); }
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

// acc(k, j) += sum_{i < rows} u[i * ldu + k] g[i + j * ldg] for k < r, j < M: k in chunks of
// KC vectors, the M x KC accumulators held in registers across the block's rows, so acc is read
// and written once per block, and each row of u (in cache) once per chunk.
template <class L, int M, int KC>
KFORGE_AVX2 void accumulate_avx2(const typename L::T* u, std::ptrdiff_t rows, std::ptrdiff_t r, std::ptrdiff_t ldu,
                                 const typename L::T* g, std::ptrdiff_t ldg, typename L::T* acc, std::ptrdiff_t ldacc) {
  constexpr int W = L::kWidth;
  std::ptrdiff_t k = 0;
  for (; k + W * KC <= r; k += W * KC) {
    typename L::V a[M][KC];
    for (int j = 0; j < M; ++j)
      for (int q = 0; q < KC; ++q) a[j][q] = L::load(acc + j * ldacc + k + W * q);
    for (std::ptrdiff_t i = 0; i < rows; ++i) {
      typename L::V uv[KC];
      for (int q = 0; q < KC; ++q) uv[q] = L::load(u + i * ldu + k + W * q);
      for (int j = 0; j < M; ++j) {
        const typename L::V gv = L::broadcast(g + i + j * ldg);
        for (int q = 0; q < KC; ++q) a[j][q] = L::fma(uv[q], gv, a[j][q]);
      }
    }
    for (int j = 0; j < M; ++j)
      for (int q = 0; q < KC; ++q) L::store(acc + j * ldacc + k + W * q, a[j][q]);
  }
  if constexpr (KC > 1) {  // the last full vector, then the scalar tail
    accumulate_avx2<L, M, 1>(u + k, rows, r - k, ldu, g, ldg, acc + k, ldacc);
  } else {
    for (; k < r; ++k)
      for (int j = 0; j < M; ++j) {
        typename L::T s = acc[j * ldacc + k];
        for (std::ptrdiff_t i = 0; i < rows; ++i) s += u[i * ldu + k] * g[i + j * ldg];
        acc[j * ldacc + k] = s;
      }
  }
}

template <class L>
using AccFn = void (*)(const typename L::T*, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t, const typename L::T*,
                       std::ptrdiff_t, typename L::T*, std::ptrdiff_t);
// Two vectors of k per pass up to 5 right-hand sides (10 accumulators + 2 rows + a broadcast in
// the 16 ymm registers), one from 6 on.
template <class L>
constexpr AccFn<L> kAcc[8] = {accumulate_avx2<L, 1, 2>, accumulate_avx2<L, 2, 2>, accumulate_avx2<L, 3, 2>,
                              accumulate_avx2<L, 4, 2>, accumulate_avx2<L, 5, 2>, accumulate_avx2<L, 6, 1>,
                              accumulate_avx2<L, 7, 1>, accumulate_avx2<L, 8, 1>};

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes && !portable_only.load(std::memory_order_relaxed);
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

void force_portable(bool on) { portable_only.store(on, std::memory_order_relaxed); }

std::ptrdiff_t fused_block_rows(std::ptrdiff_t r, std::size_t value_bytes) {
  // About 192 KiB of U per block: it stays in L2 (512 KiB on Zen 3) beside b, acc and the block's
  // f and g while the second product reads it again.
  constexpr std::ptrdiff_t kBlockBytes = 192 * 1024;
  const std::ptrdiff_t row_bytes = static_cast<std::ptrdiff_t>(value_bytes) * std::max<std::ptrdiff_t>(r, 1);
  return std::clamp<std::ptrdiff_t>(kBlockBytes / row_bytes, 4, 1024);
}

namespace {

template <class T>
void fused_row_pass_impl(const T* ut, std::ptrdiff_t r, std::ptrdiff_t n, std::ptrdiff_t ldu, const T* b,
                         std::ptrdiff_t ldb, std::ptrdiff_t mb, T* f, std::ptrdiff_t ldf, T* g, std::ptrdiff_t ldg,
                         std::ptrdiff_t mg, T* acc, std::ptrdiff_t ldacc,
                         const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>& slopes) {
  for (std::ptrdiff_t j = 0; j < mg; ++j) std::fill(acc + j * ldacc, acc + j * ldacc + r, T(0));
  const std::ptrdiff_t block = fused_block_rows(r, sizeof(T));
  for (std::ptrdiff_t i0 = 0; i0 < n; i0 += block) {
    const std::ptrdiff_t i1 = std::min(n, i0 + block), rows = i1 - i0;
    const T* ub = ut + i0 * ldu;  // U's rows i0..i1-1, each r contiguous values
    if (mb > 0) column_dots(ub, r, rows, ldu, b, ldb, mb, f + i0, ldf);
    slopes(i0, i1);
    if (mg <= 0 || r <= 0) continue;
#ifdef KFORGE_SKINNY_AVX2
    if (have_avx2()) {
      using L = std::conditional_t<std::is_same_v<T, float>, Floats, Doubles>;
      for (std::ptrdiff_t j = 0; j < mg; j += 8) {
        const std::ptrdiff_t mj = std::min<std::ptrdiff_t>(8, mg - j);
        kAcc<L>[mj - 1](ub, rows, r, ldu, g + i0 + j * ldg, ldg, acc + j * ldacc, ldacc);
      }
      continue;
    }
#endif
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(r), static_cast<blasint>(mg),
                  static_cast<blasint>(rows), 1.0F, ub, static_cast<blasint>(ldu), g + i0, static_cast<blasint>(ldg),
                  1.0F, acc, static_cast<blasint>(ldacc));
    else
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(r), static_cast<blasint>(mg),
                  static_cast<blasint>(rows), 1.0, ub, static_cast<blasint>(ldu), g + i0, static_cast<blasint>(ldg),
                  1.0, acc, static_cast<blasint>(ldacc));
  }
}

}  // namespace

void fused_row_pass(const float* ut, std::ptrdiff_t r, std::ptrdiff_t n, std::ptrdiff_t ldu, const float* b,
                    std::ptrdiff_t ldb, std::ptrdiff_t mb, float* f, std::ptrdiff_t ldf, float* g, std::ptrdiff_t ldg,
                    std::ptrdiff_t mg, float* acc, std::ptrdiff_t ldacc,
                    const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>& slopes) {
  fused_row_pass_impl(ut, r, n, ldu, b, ldb, mb, f, ldf, g, ldg, mg, acc, ldacc, slopes);
}

void fused_row_pass(const double* ut, std::ptrdiff_t r, std::ptrdiff_t n, std::ptrdiff_t ldu, const double* b,
                    std::ptrdiff_t ldb, std::ptrdiff_t mb, double* f, std::ptrdiff_t ldf, double* g,
                    std::ptrdiff_t ldg, std::ptrdiff_t mg, double* acc, std::ptrdiff_t ldacc,
                    const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>& slopes) {
  fused_row_pass_impl(ut, r, n, ldu, b, ldb, mb, f, ldf, g, ldg, mg, acc, ldacc, slopes);
}

}  // namespace kforge::kmodel::skinny
