// spmm_bell for the cpu backend: C = A * B with A in blocked-ELL (the spmm_bell problem,
// kernels/sparse/spmm_bell_problem.hpp): BS x BS tiles, EC slots per block row, each slot's block
// column in block_col (-1: padding, after the tiles) and its tile dense and row-major in values.
//
// Block (x, y): block row y, column strip x of BN columns. Per CW = NV * KF_VW columns, BS x NV
// accumulators; per tile, each of its BS rows of B (NV vectors) is loaded once and feeds the BS
// rows of C (BS x NV FMAs per load): no column index per nonzero, B's rows read once per tile
// rather than once per nonzero. It multiplies the tile's zeros too (exact: 0 * b + s == s for
// finite b), so it wins where tiles are full (block-sparse) and loses where they are mostly
// zeros (uniform), as bench/spmm_bell_vs_csr measures. Rows past M are computed and not stored;
// B's rows past K are never read (the last block column's tile is cut to K - k0 columns).
//
// BS is a size of the problem (it fixes the tensors' lengths), passed at run time: the block
// dispatches to a tile compiled for it, exact for 1, 2, 4, 8 and 16 (the accumulators' shape a
// constant), else the next of those with BS's rows bounded at run time. Parameters (#defines):
// BN columns per strip, NV vectors per register tile, VW floats per vector (0: widest). Tail
// columns one float at a time.
#define CW (NV * KF_VW)

// TB: the accumulator rows compiled in; EXACT: bs == TB (the row loops' bounds constants).
template <int TB, bool EXACT>
static void bell_tiles(const int* slots, const float* tiles, const float* B, float* C, int K, int N, int EC, int bs,
                       int r0, int nr, int n0, int nc) {
  const int rows = EXACT ? TB : bs, area = rows * rows;
  int j = 0;
  for (; j + CW <= nc; j += CW) {
    kf_vf acc[TB][NV] = {};
    for (int s = 0; s < EC; ++s) {
      const int bc = slots[s];
      if (bc < 0) break;  // padding follows the tiles
      const float* a = tiles + (long long)s * area;
      const int k0 = bc * rows, nk = K - k0 < rows ? K - k0 : rows;
      for (int k = 0; k < nk; ++k) {
        kf_vf b[NV];
        for (int v = 0; v < NV; ++v) b[v] = kf_load(B + (long long)(k0 + k) * N + n0 + j + v * KF_VW);
        for (int i = 0; i < (EXACT ? TB : rows); ++i) {
          const kf_vf w = kf_splat(a[i * rows + k]);
          for (int v = 0; v < NV; ++v) acc[i][v] += w * b[v];
        }
      }
    }
    for (int i = 0; i < nr; ++i)
      for (int v = 0; v < NV; ++v) kf_store(C + (long long)(r0 + i) * N + n0 + j + v * KF_VW, acc[i][v]);
  }
  for (; j < nc; ++j)
    for (int i = 0; i < nr; ++i) {
      float acc = 0;
      for (int s = 0; s < EC; ++s) {
        const int bc = slots[s];
        if (bc < 0) break;
        const float* a = tiles + (long long)s * area;
        const int k0 = bc * rows, nk = K - k0 < rows ? K - k0 : rows;
        for (int k = 0; k < nk; ++k) acc += a[i * rows + k] * B[(long long)(k0 + k) * N + n0 + j];
      }
      C[(long long)(r0 + i) * N + n0 + j] = acc;
    }
}

static void spmm_bell_block(const kf_ctx& ctx, const int* block_col, const float* values, const float* B, float* C,
                            int M, int K, int N, int NNZ, int BS, int EC, float pattern) {
  (void)NNZ, (void)pattern;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const int br = (int)ctx.block_idx.y, r0 = br * BS, nr = M - r0 < BS ? M - r0 : BS;
  const int* slots = block_col + (long long)br * EC;
  const float* tiles = values + (long long)br * EC * BS * BS;
  switch (BS) {
    case 1: return bell_tiles<1, true>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0, nc);
    case 2: return bell_tiles<2, true>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0, nc);
    case 3: return bell_tiles<4, false>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0, nc);
    case 4: return bell_tiles<4, true>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0, nc);
    case 8: return bell_tiles<8, true>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0, nc);
    case 16: return bell_tiles<16, true>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0, nc);
    default:  // the problem refuses BS > 16
      if (BS < 8) return bell_tiles<8, false>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0, nc);
      return bell_tiles<16, false>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0, nc);
  }
}

KF_KERNEL(spmm_bell, spmm_bell_block)
