// spmm_bell for the opencl backend: C = A * B with A in blocked-ELL (the spmm_bell problem,
// kernels/sparse/spmm_bell_problem.hpp): BS x BS tiles, EC slots per block row, each slot's block
// column in block_col (-1: padding, after the tiles) and its tile dense and row-major in values.
//
// Work-group (WX, WY): WY block rows, WX work-items across a strip of WX * CPT columns. Work-item
// (lx, ly) owns block row y = group_y * WY + ly and the columns n0 + lx + c * WX (c < CPT), and
// goes over the block row's BS rows in chunks of RB: an RB x CPT register tile per chunk. Per
// tile it loads each of the tile's BS rows of B once per chunk (CPT floats, coalesced across lx)
// and feeds the chunk's RB rows of C with it (RB x CPT FMAs per row of B loaded: spmm.cl does
// 1 x CPT), and reads one block column per tile rather than one column index per nonzero. The
// tile's values are the same for every work-item of a block row (broadcast loads). It multiplies
// the tile's zeros too (exact: 0 * b + s == s for finite b), so it wins only where tiles are
// full, as the cpu kernel. No barriers, no atomics: each element of C has one writer, summed in
// slot order (deterministic). Rows past M are computed and not stored; B's rows past K are never
// read (the last block column's tile is cut to K - k0 rows of B); columns past N load 0 and are
// not stored.
//
// BS is a size of the problem (it fixes the tensors' lengths), passed at run time; RB, the
// accumulator rows, is a parameter, so the register tile's shape is a constant whatever BS the
// data has and no parameter can disagree with it: a chunk of RB rows is exact (the row loop
// constant-folded) when it lies inside BS, else (BS not a multiple of RB, or below it) bounded
// by a branch uniform over the work-group. RB = BS gives each row of B loaded once per tile;
// PoCL runs each work-item's code scalar (its loops over slots and k stop it vectorizing across
// work-items), so there RB x CPT, the FMAs per load, is what the speed follows. Parameters
// (#defines): WX work-items along columns, CPT columns per work-item, WY block rows per
// work-group, RB rows per register tile.

// Rows i0 .. i0 + rr - 1 of block row (r0 / BS) for the work-item's columns; rr <= RB (== RB:
// the guards fold).
static inline void bell_rows(__global const int* slots, __global const float* tiles, __global const float* B,
                             __global float* C, int K, int N, int EC, int bs, int i0, int rr, int r0, int nr,
                             int n0) {
  float acc[RB][CPT];
  for (int i = 0; i < RB; ++i)
    for (int c = 0; c < CPT; ++c) acc[i][c] = 0.0f;
  const int area = bs * bs;
  for (int s = 0; s < EC; ++s) {
    const int bc = slots[s];
    if (bc < 0) break;  // padding follows the tiles
    __global const float* a = tiles + (long)s * area + i0 * bs;
    const int k0 = bc * bs, nk = min(bs, K - k0);
    for (int k = 0; k < nk; ++k) {
      __global const float* brow = B + (long)(k0 + k) * N;
      float b[CPT];
      for (int c = 0; c < CPT; ++c) {
        const int j = n0 + c * WX;
        b[c] = j < N ? brow[j] : 0.0f;
      }
      for (int i = 0; i < RB; ++i)
        if (i < rr) {
          const float w = a[i * bs + k];
          for (int c = 0; c < CPT; ++c) acc[i][c] = fma(w, b[c], acc[i][c]);
        }
    }
  }
  for (int i = 0; i < RB; ++i)
    if (i < rr && i0 + i < nr)
      for (int c = 0; c < CPT; ++c) {
        const int j = n0 + c * WX;
        if (j < N) C[(long)(r0 + i0 + i) * N + j] = acc[i][c];
      }
}

__kernel void spmm_bell(__global const int* block_col, __global const float* values, __global const float* B,
                        __global float* C, int M, int K, int N, int NNZ, int BS, int EC, float pattern) {
  const int br = get_group_id(1) * WY + get_local_id(1);
  if (br * BS >= M) return;
  const int n0 = get_group_id(0) * (WX * CPT) + get_local_id(0);
  const int r0 = br * BS, nr = min(BS, M - r0);
  __global const int* slots = block_col + (long)br * EC;
  __global const float* tiles = values + (long)br * EC * BS * BS;
  for (int i0 = 0; i0 < nr; i0 += RB) {  // chunks past M are skipped: their rows are not stored
    if (i0 + RB <= BS) bell_rows(slots, tiles, B, C, K, N, EC, BS, i0, RB, r0, nr, n0);
    else bell_rows(slots, tiles, B, C, K, N, EC, BS, i0, BS - i0, r0, nr, n0);
  }
}
