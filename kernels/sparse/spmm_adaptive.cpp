// spmm for the cpu backend, density-adaptive: C = A * B with A in CSR, and per tile of RT rows
// the path chosen from the tile's measured density, nnz(tile) / (rows * K):
//
//   dense path (density >= DENSE_PERMILLE / 1000): the tile's rows scattered into a dense
//     RT x K scratch tile, then a register-blocked dense product: for each k, one load of B's
//     row k (DNV vectors) feeds RT rows' accumulators (RT x DNV FMAs). Each B row is read once per
//     tile instead of once per nonzero, and no index is followed; but it multiplies the zeros.
//   CSR path (otherwise): spmm.cpu's own code (kernels/common/spmm_rows.hpp: NV-vector register
//     tiles, prefetch, 2-D tiles), run once over each run of consecutive CSR tiles of the block,
//     so a matrix with no dense tile runs exactly what spmm.cpu runs, on the same row blocks.
//
// On a CPU the dense path's FMAs per useful FMA are 1 / density, against CSR's one load per
// FMA, so it pays only at high density (bench/spmm_adaptive_vs_fixed measures the crossover
// and where the choice loses). Zeros the dense path adds are exact (0 * b + s == s for finite
// b), so each output still carries only its row's nonzeros' rounding: the problem's per-row
// bound holds on both paths.
//
// Grid: (ceil(N / BN) column strips) x (RBLOCKS row blocks of equal work, spmm.cpu's split);
// inside a block, tiles of RT rows aligned to multiples of RT (cut at the block's ends).
// Parameters (#defines): BN columns per strip, VW floats per vector (0: widest), RBLOCKS row
// blocks; the dense path's RT rows per tile, DNV vectors per register tile and DENSE_PERMILLE
// threshold in 1/1000 (0: always dense, 1001: never); the CSR path's NV, UN, PD, KP, KMIN, L2KB
// (spmm.cpu's parameters, same meanings and defaults).
#include <vector>

#include "kernels/common/spmm_rows.hpp"  // first_row_at, spmm_rows: the CSR path

// The dense path: the tile's rows into a zeroed K x RT tile (k-major: the RT values one k
// broadcasts share a cache line), then C = tile^T * B over the strip.
static void dense_rows(const int* row_ptr, const int* col_idx, const float* values, const float* B, float* C,
                       int K, int N, int r0, int r1, int n0, int nc) {
  thread_local std::vector<float> tile;
  tile.assign((size_t)RT * K, 0.0f);
  for (int r = r0; r < r1; ++r)
    for (int p = row_ptr[r]; p < row_ptr[r + 1]; ++p) tile[(size_t)col_idx[p] * RT + (r - r0)] = values[p];
  const float* a = tile.data();
  const int nr = r1 - r0;
  int j = 0;
  for (; j + DNV * KF_VW <= nc; j += DNV * KF_VW) {
    kf_vf acc[RT][DNV] = {};
    const float* bcol = B + n0 + j;
    for (int k = 0; k < K; ++k) {
      kf_vf b[DNV];
      for (int v = 0; v < DNV; ++v) b[v] = kf_load(bcol + (long long)k * N + v * KF_VW);
      for (int i = 0; i < RT; ++i) {
        const kf_vf s = kf_splat(a[(size_t)k * RT + i]);
        for (int v = 0; v < DNV; ++v) acc[i][v] += s * b[v];
      }
    }
    for (int i = 0; i < nr; ++i)
      for (int v = 0; v < DNV; ++v) kf_store(C + (long long)(r0 + i) * N + n0 + j + v * KF_VW, acc[i][v]);
  }
  for (; j < nc; ++j)  // tail columns: one float at a time
    for (int i = 0; i < nr; ++i) {
      float acc = 0;
      for (int k = 0; k < K; ++k) acc += a[(size_t)k * RT + i] * B[(long long)k * N + n0 + j];
      C[(long long)(r0 + i) * N + n0 + j] = acc;
    }
}

static void spmm_adaptive_block(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* values,
                                const float* B, float* C, int M, int K, int N, int NNZ, float pattern) {
  (void)NNZ, (void)pattern;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const long long nb = ctx.grid_dim.y, b = ctx.block_idx.y;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  int csr0 = r0;  // the first row of the current run of CSR tiles
  for (int t0 = r0; t0 < r1;) {
    int t1 = (t0 / RT + 1) * RT;
    if (t1 > r1) t1 = r1;
    const double nnz = (double)row_ptr[t1] - (double)row_ptr[t0];
    if (nnz * 1000.0 >= (double)DENSE_PERMILLE * (double)(t1 - t0) * (double)K) {
      if (csr0 < t0) spmm_rows(row_ptr, col_idx, values, B, C, K, N, csr0, t0, n0, nc);
      dense_rows(row_ptr, col_idx, values, B, C, K, N, t0, t1, n0, nc);
      csr0 = t1;
    }
    t0 = t1;
  }
  if (csr0 < r1) spmm_rows(row_ptr, col_idx, values, B, C, K, N, csr0, r1, n0, nc);
}

KF_KERNEL(spmm_adaptive, spmm_adaptive_block)
