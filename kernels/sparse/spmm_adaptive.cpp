// spmm for the cpu backend, density-adaptive: C = A * B with A in CSR, and per tile of RT rows
// the path chosen from the tile's measured density, nnz(tile) / (rows * K):
//
//   dense path (density >= DENSE_PERMILLE / 1000): the tile's rows scattered into a dense
//     RT x K scratch tile, then a register-blocked dense product: for each k, one load of B's
//     row k (NV vectors) feeds RT rows' accumulators (RT x NV FMAs). Each B row is read once per
//     tile instead of once per nonzero, and no index is followed; but it multiplies the zeros.
//   CSR path (otherwise): spmm.cpp's row loop, one B row per nonzero.
//
// On a CPU the dense path's FMAs per useful FMA are 1 / density, against CSR's one load per
// FMA, so it pays from a density of about a half (bench/spmm_adaptive measures the crossover
// and where the choice loses). Zeros the dense path adds are exact (0 * b + s == s for finite
// b), so each output still carries only its row's nonzeros' rounding: the problem's per-row
// bound holds on both paths.
//
// Grid: (ceil(N / BN) column strips) x (ceil(M / RT) row tiles); the pool balances the tiles.
// Parameters (#defines): BN columns per strip, NV vectors per register tile, VW floats per vector
// (0: widest), RT rows per tile, DENSE_PERMILLE the density threshold in 1/1000 (0: always
// dense, 1001: never).
#include <vector>

#include "kernels/common/csr_rows.hpp"  // CW, csr_rows: the CSR path


// The dense path: the tile's rows into a zeroed K x RT tile (k-major: the RT values one k
// broadcasts share a cache line), then C = tile^T * B over the strip.
static void dense_rows(const float* row_ptr, const float* col_idx, const float* values, const float* B, float* C,
                       int K, int N, int r0, int r1, int n0, int nc) {
  thread_local std::vector<float> tile;
  tile.assign((size_t)RT * K, 0.0f);
  for (int r = r0; r < r1; ++r)
    for (int p = (int)row_ptr[r]; p < (int)row_ptr[r + 1]; ++p) tile[(size_t)(int)col_idx[p] * RT + (r - r0)] = values[p];
  const float* a = tile.data();
  const int nr = r1 - r0;
  int j = 0;
  for (; j + CW <= nc; j += CW) {
    kf_vf acc[RT][NV] = {};
    const float* bcol = B + n0 + j;
    for (int k = 0; k < K; ++k) {
      kf_vf b[NV];
      for (int v = 0; v < NV; ++v) b[v] = kf_load(bcol + (long long)k * N + v * KF_VW);
      for (int i = 0; i < RT; ++i) {
        const kf_vf s = kf_splat(a[(size_t)k * RT + i]);
        for (int v = 0; v < NV; ++v) acc[i][v] += s * b[v];
      }
    }
    for (int i = 0; i < nr; ++i)
      for (int v = 0; v < NV; ++v) kf_store(C + (long long)(r0 + i) * N + n0 + j + v * KF_VW, acc[i][v]);
  }
  for (; j < nc; ++j)  // tail columns: one float at a time
    for (int i = 0; i < nr; ++i) {
      float acc = 0;
      for (int k = 0; k < K; ++k) acc += a[(size_t)k * RT + i] * B[(long long)k * N + n0 + j];
      C[(long long)(r0 + i) * N + n0 + j] = acc;
    }
}

static void spmm_adaptive_block(const kf_ctx& ctx, const float* row_ptr, const float* col_idx, const float* values,
                                const float* B, float* C, int M, int K, int N, int NNZ, float pattern) {
  (void)NNZ, (void)pattern;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const int r0 = (int)ctx.block_idx.y * RT, r1 = M - r0 < RT ? M : r0 + RT;
  const double nnz = (double)row_ptr[r1] - (double)row_ptr[r0];
  if (nnz * 1000.0 >= (double)DENSE_PERMILLE * (double)(r1 - r0) * (double)K)
    dense_rows(row_ptr, col_idx, values, B, C, K, N, r0, r1, n0, nc);
  else
    csr_rows(row_ptr, col_idx, values, B, C, N, r0, r1, n0, nc);
}

KF_KERNEL(spmm_adaptive, spmm_adaptive_block)
