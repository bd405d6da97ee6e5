#pragma once
// The spectral path's per-step products with few right-hand sides (a column per fold): U^T G and
// U B with G, B of 5..10 columns. OpenBLAS's sgemm packs all of U on every such call (measured:
// its copy routines took as long as its kernel, 19% and 20% of a whole `kmodel logreg` run at
// n = 1000), so these stream U directly instead.
#include <cstddef>
#include <functional>

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

// One pass over U's rows for a whole path step (the "one pass" steps): ut is U's transpose, (r, n)
// column-major with leading dimension ldu (U's row i is ut + i * ldu, r contiguous floats). Row
// block by row block (a block of U's rows sized to stay in L2):
//   f(blk, j) = U_blk b(:, j)                    for j < mb (b: r x mb, leading dimension ldb)
//   slopes(i0, i1) fills g(i0..i1-1, j) for j < mg, reading f(i0..i1-1, :) (the caller's loss)
//   acc(:, j) += U_blk^T g(blk, j)               for j < mg (acc: r x mg, zeroed first)
// so U is read from memory once per step instead of twice (U b, then U^T g), the second product
// taking the block from cache. f is n x mb, g is n x mg, both column-major. AVX2 + FMA where the
// CPU has them, else OpenBLAS's sgemm on each block (the same one pass).
void fused_row_pass(const float* ut, std::ptrdiff_t r, std::ptrdiff_t n, std::ptrdiff_t ldu, const float* b,
                    std::ptrdiff_t ldb, std::ptrdiff_t mb, float* f, std::ptrdiff_t ldf, float* g, std::ptrdiff_t ldg,
                    std::ptrdiff_t mg, float* acc, std::ptrdiff_t ldacc,
                    const std::function<void(std::ptrdiff_t i0, std::ptrdiff_t i1)>& slopes);

// The same in double (each lambda's end points judged in double: f, the slopes, U^T g).
void fused_row_pass(const double* ut, std::ptrdiff_t r, std::ptrdiff_t n, std::ptrdiff_t ldu, const double* b,
                    std::ptrdiff_t ldb, std::ptrdiff_t mb, double* f, std::ptrdiff_t ldf, double* g,
                    std::ptrdiff_t ldg, std::ptrdiff_t mg, double* acc, std::ptrdiff_t ldacc,
                    const std::function<void(std::ptrdiff_t i0, std::ptrdiff_t i1)>& slopes);

// Rows per block in fused_row_pass for a given r and value size (exposed so tests can make n not
// a multiple).
std::ptrdiff_t fused_block_rows(std::ptrdiff_t r, std::size_t value_bytes = sizeof(float));

// For tests: true routes every call above to OpenBLAS, as on a CPU without AVX2 + FMA.
void force_portable(bool on);

}  // namespace kforge::kmodel::skinny
