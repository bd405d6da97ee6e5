// spmm_bell for the opencl backend: C = A * B with A in blocked-ELL (the spmm_bell problem,
// kernels/sparse/spmm_bell_problem.hpp): BS x BS tiles, EC slots per block row, each slot's block
// column in block_col (-1: padding, after the tiles) and its tile dense and row-major in values.
//
// Work-group (WX, WY): WY block rows, WX work-items across a strip of WX * CPT columns. Work-item
// (lx, ly) owns block row y = group_y * WY + ly, all of its BS rows, and the columns
// n0 + lx + c * WX (c < CPT): a BS x CPT register tile. Per tile it loads each of the tile's BS
// rows of B once (CPT floats, coalesced across lx) and feeds all BS rows of C with it (BS x CPT
// FMAs per row of B loaded: spmm.cl does 1 x CPT), and reads one block column per tile rather
// than one column index per nonzero. The tile's values are the same for every work-item of a
// block row (one broadcast load each). It multiplies the tile's zeros too (exact: 0 * b + s == s
// for finite b), so it wins only where tiles are full, as the cpu kernel. No barriers, no
// atomics: each element of C has one writer, summed in slot order (deterministic). Rows past M
// are computed and not stored; B's rows past K are never read (the last block column's tile is
// cut to K - k0 rows of B); columns past N load 0 and are not stored.
//
// BS is a size of the problem (it fixes the tensors' lengths), passed at run time: the work-item
// dispatches to a tile compiled for it (the accumulator count a constant, so they stay in
// registers), exact for 1, 2, 4, 8 and 16, else the next of those up with the rows past BS
// skipped by a branch uniform over the work-group. The spec's constraint BS * CPT <= 32 bounds
// the accumulators; a tile it excludes (TB * CPT > 32: the power of two up from a BS that holds
// it never does) compiles to nothing. Parameters (#defines): WX work-items along columns, CPT
// columns per work-item, WY block rows per work-group.

// One block row's strip for a tile of TB accumulator rows; `rows` is BS (== TB when exact).
#define BELL_TILE(TB)                                                                                    \
  static void bell_tile_##TB(__global const float* slots, __global const float* tiles,                  \
                             __global const float* B, __global float* C, int K, int N, int EC,          \
                             int rows, int r0, int nr, int n0) {                                         \
    if (TB * CPT > 32) return; /* BS * CPT <= 32 (the spec) never sends a BS here: no code */            \
    float acc[TB][CPT];                                                                                  \
    for (int i = 0; i < TB; ++i)                                                                         \
      for (int c = 0; c < CPT; ++c) acc[i][c] = 0.0f;                                                    \
    const int area = rows * rows;                                                                        \
    for (int s = 0; s < EC; ++s) {                                                                       \
      const int bc = (int)slots[s];                                                                      \
      if (bc < 0) break; /* padding follows the tiles */                                                 \
      __global const float* a = tiles + (long)s * area;                                                  \
      const int k0 = bc * rows, nk = min(rows, K - k0);                                                  \
      for (int k = 0; k < nk; ++k) {                                                                     \
        __global const float* brow = B + (long)(k0 + k) * N;                                             \
        float b[CPT];                                                                                    \
        for (int c = 0; c < CPT; ++c) {                                                                  \
          const int j = n0 + c * WX;                                                                     \
          b[c] = j < N ? brow[j] : 0.0f;                                                                 \
        }                                                                                                \
        for (int i = 0; i < TB; ++i) {                                                                   \
          if (i < rows) { /* constant-folded when exact; uniform over the group otherwise */             \
            const float w = a[i * rows + k];                                                             \
            for (int c = 0; c < CPT; ++c) acc[i][c] = fma(w, b[c], acc[i][c]);                           \
          }                                                                                              \
        }                                                                                                \
      }                                                                                                  \
    }                                                                                                    \
    for (int i = 0; i < TB; ++i)                                                                         \
      if (i < nr)                                                                                        \
        for (int c = 0; c < CPT; ++c) {                                                                  \
          const int j = n0 + c * WX;                                                                     \
          if (j < N) C[(long)(r0 + i) * N + j] = acc[i][c];                                              \
        }                                                                                                \
  }

BELL_TILE(1)
BELL_TILE(2)
BELL_TILE(4)
BELL_TILE(8)
BELL_TILE(16)

__kernel void spmm_bell(__global const float* block_col, __global const float* values, __global const float* B,
                        __global float* C, int M, int K, int N, int NNZ, int BS, int EC, float pattern) {
  const int br = get_group_id(1) * WY + get_local_id(1);
  if (br * BS >= M) return;
  const int n0 = get_group_id(0) * (WX * CPT) + get_local_id(0);
  const int r0 = br * BS, nr = min(BS, M - r0);
  __global const float* slots = block_col + (long)br * EC;
  __global const float* tiles = values + (long)br * EC * BS * BS;
  switch (BS) {
    case 1: bell_tile_1(slots, tiles, B, C, K, N, EC, 1, r0, nr, n0); break;
    case 2: bell_tile_2(slots, tiles, B, C, K, N, EC, 2, r0, nr, n0); break;
    case 4: bell_tile_4(slots, tiles, B, C, K, N, EC, 4, r0, nr, n0); break;
    case 8: bell_tile_8(slots, tiles, B, C, K, N, EC, 8, r0, nr, n0); break;
    case 16: bell_tile_16(slots, tiles, B, C, K, N, EC, 16, r0, nr, n0); break;
    default:  // the next tile up, rows bounded (the problem refuses BS > 16)
      if (BS < 4) bell_tile_4(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0);
      else if (BS < 8) bell_tile_8(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0);
      else bell_tile_16(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0);
  }
}
