// spmm over blocked-ELL for the cpu backend: C = A * B with A in blocked-ELL (include/kforge/
// sparse.hpp, sparse::BlockedEll): BS x BS tiles, EC slots per block row, each slot's block
// column in block_col (-1: padding) and its tile's values dense and row-major in values.
//
// Block (x, y): block row y, column strip x of BN columns. Per CW = NV * KF_VW columns, BS x NV
// accumulators; per tile, each of its BS rows of B (NV vectors) is loaded once and feeds the BS
// rows of C (BS x NV FMAs per load): no column index per nonzero, B's rows read once per tile
// rather than once per nonzero. It multiplies the tile's zeros too (exact: 0 * b + s == s for
// finite b), so it wins where tiles are full (block-sparse) and loses where they are mostly
// zeros (uniform), as bench/spmm_bell_vs_csr measures. Cells past A's ragged edge are zeros in
// the tile and B's rows past K are never read.
//
// Not yet a kernel of a problem (the spmm problem hands kernels CSR): bench/spmm_bell_vs_csr
// compiles and checks it against spmm's reference. Parameters (#defines): BS the tile size
// (must be the data's), BN columns per strip, NV vectors per register tile, VW floats per vector
// (0: widest). Tail columns one float at a time.
#define CW (NV * KF_VW)

static void spmm_bell_block(const kf_ctx& ctx, const float* block_col, const float* values, const float* B, float* C,
                            int M, int K, int N, int EC) {
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const int br = (int)ctx.block_idx.y, r0 = br * BS, nr = M - r0 < BS ? M - r0 : BS;
  const float* slots = block_col + (long long)br * EC;
  const float* tiles = values + (long long)br * EC * BS * BS;
  int j = 0;
  for (; j + CW <= nc; j += CW) {
    kf_vf acc[BS][NV] = {};
    for (int s = 0; s < EC; ++s) {
      const int bc = (int)slots[s];
      if (bc < 0) break;  // padding follows the tiles
      const float* a = tiles + (long long)s * BS * BS;
      const int k0 = bc * BS, nk = K - k0 < BS ? K - k0 : BS;
      for (int k = 0; k < nk; ++k) {
        kf_vf b[NV];
        for (int v = 0; v < NV; ++v) b[v] = kf_load(B + (long long)(k0 + k) * N + n0 + j + v * KF_VW);
        for (int i = 0; i < BS; ++i) {
          const kf_vf w = kf_splat(a[i * BS + k]);
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
        const int bc = (int)slots[s];
        if (bc < 0) break;
        const float* a = tiles + (long long)s * BS * BS;
        const int k0 = bc * BS, nk = K - k0 < BS ? K - k0 : BS;
        for (int k = 0; k < nk; ++k) acc += a[i * BS + k] * B[(long long)(k0 + k) * N + n0 + j];
      }
      C[(long long)(r0 + i) * N + n0 + j] = acc;
    }
}

KF_KERNEL(spmm_bell, spmm_bell_block)
