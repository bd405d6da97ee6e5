// spmm_bell for the cuda backend: C = A * B with A in blocked-ELL. The scheme of spmm_bell.cl
// (read it for the why): block (WX, WY) owns WY block rows and a strip of WX * CPT columns;
// thread (x, y) goes over block row y's BS rows in chunks of RB, an RB x CPT register tile for
// its columns n0 + x + c * WX. With WX = 32 a warp owns one block row's strip: per tile it reads
// one block column, each of the tile's rows of B once per chunk (coalesced across the warp) and
// reuses it from registers for the chunk's RB rows of C; the tile's values are warp-uniform
// loads (one broadcast each). No shared memory: the reuse a shared B tile would bring (the
// block row's rows of C per row of B) is already in registers at RB = BS, and two block rows
// rarely share a block column, so staging B for the whole block would add a barrier per slot
// without saving a load. (cuSPARSE's blocked-ELL SpMM is the peer on a GPU: it targets tensor
// cores at fp16 and larger tiles; this is an fp32 CUDA-core version, compiled here for sm_90
// and not yet run on a GPU.) No atomics: each element of C has one writer, summed in slot order.
//
// BS is a size (run time); RB a parameter, so the accumulators' shape is a constant whatever
// BS the data has: a chunk inside BS is exact (the row loop folded), the last one of a BS that
// is not a multiple of RB (or below it) bounded by a warp-uniform branch. Parameters
// (#defines): WX threads along columns, CPT columns per thread, WY block rows per block, RB rows
// per register tile.
__device__ __forceinline__ void bell_rows(const int* __restrict__ slots, const float* __restrict__ tiles,
                                          const float* __restrict__ B, float* __restrict__ C, int K, int N,
                                          int EC, int bs, int i0, int rr, int r0, int nr, int n0) {
  float acc[RB][CPT];
#pragma unroll
  for (int i = 0; i < RB; ++i)
#pragma unroll
    for (int c = 0; c < CPT; ++c) acc[i][c] = 0.0f;
  const int area = bs * bs;
  for (int s = 0; s < EC; ++s) {
    const int bc = __ldg(slots + s);
    if (bc < 0) break;  // padding follows the tiles
    const float* a = tiles + (long long)s * area + i0 * bs;
    const int k0 = bc * bs, nk = min(bs, K - k0);
    for (int k = 0; k < nk; ++k) {
      const float* brow = B + (long long)(k0 + k) * N;
      float b[CPT];
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int j = n0 + c * WX;
        b[c] = j < N ? __ldg(brow + j) : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < RB; ++i)
        if (i < rr) {  // folded when the chunk is whole; warp-uniform otherwise
          const float w = __ldg(a + i * bs + k);
#pragma unroll
          for (int c = 0; c < CPT; ++c) acc[i][c] = fmaf(w, b[c], acc[i][c]);
        }
    }
  }
#pragma unroll
  for (int i = 0; i < RB; ++i)
    if (i < rr && i0 + i < nr)
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int j = n0 + c * WX;
        if (j < N) C[(long long)(r0 + i0 + i) * N + j] = acc[i][c];
      }
}

extern "C" __global__ void __launch_bounds__(WX * WY)
spmm_bell(const int* __restrict__ block_col, const float* __restrict__ values, const float* __restrict__ B,
          float* __restrict__ C, int M, int K, int N, int NNZ, int BS, int EC, float pattern) {
  const int br = blockIdx.y * WY + threadIdx.y;
  if (br * BS >= M) return;
  const int n0 = blockIdx.x * (WX * CPT) + threadIdx.x;
  const int r0 = br * BS, nr = min(BS, M - r0);
  const int* slots = block_col + (long long)br * EC;
  const float* tiles = values + (long long)br * EC * BS * BS;
  for (int i0 = 0; i0 < nr; i0 += RB) {  // chunks past M are skipped: their rows are not stored
    if (i0 + RB <= BS) bell_rows(slots, tiles, B, C, K, N, EC, BS, i0, RB, r0, nr, n0);
    else bell_rows(slots, tiles, B, C, K, N, EC, BS, i0, BS - i0, r0, nr, n0);
  }
}
