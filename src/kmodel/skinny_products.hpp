#pragma once
// The spectral path's per-step products with few right-hand sides (a column per fold): U^T G and
// U B with G, B of 5..10 columns. OpenBLAS's sgemm packs all of U on every such call (measured:
// its copy routines took as long as its kernel, 19% and 20% of a whole `kmodel logreg` run at
// n = 1000), so these stream U directly instead.
#include <cstddef>

namespace kforge::kmodel::skinny {

// out(c, j) = sum_i a(i, c) x(i, j) for c < cols, j < m: the dot products of a's columns (each
// `len` contiguous floats, leading dimension lda) with x's m columns (leading dimension ldx);
// out is column-major with leading dimension ldo. AVX2 + FMA where the CPU has them (checked at
// run time; kforge builds without -march), else OpenBLAS's sgemm.
void column_dots(const float* a, std::ptrdiff_t len, std::ptrdiff_t cols, std::ptrdiff_t lda, const float* x,
                 std::ptrdiff_t ldx, std::ptrdiff_t m, float* out, std::ptrdiff_t ldo);

// The same in double (the path's per-lambda products: each fit's end point and alpha).
void column_dots(const double* a, std::ptrdiff_t len, std::ptrdiff_t cols, std::ptrdiff_t lda, const double* x,
                 std::ptrdiff_t ldx, std::ptrdiff_t m, double* out, std::ptrdiff_t ldo);

}  // namespace kforge::kmodel::skinny
