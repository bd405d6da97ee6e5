// spmm_bell for the cuda backend: C = A * B with A in blocked-ELL. The scheme of spmm_bell.cl
// (read it for the why): block (WX, WY) owns WY block rows and a strip of WX * CPT columns;
// thread (x, y) keeps a BS x CPT register tile for block row y's BS rows and its columns
// n0 + x + c * WX. With WX = 32 a warp owns one block row's strip: per tile it reads one block
// column, each of the tile's BS rows of B once (coalesced across the warp) and reuses it from
// registers for all BS rows of C; the tile's values are warp-uniform loads (one broadcast each).
// No shared memory: the reuse a shared B tile would bring (BS rows of C per row of B) is already
// in registers, and two block rows rarely share a block column, so staging B for the whole block
// would add a barrier per slot without saving a load. (cuSPARSE's blocked-ELL SpMM is the peer:
// it targets tensor cores at fp16 and large tiles; this is the fp32 CUDA-core version.)
// No atomics: each element of C has one writer, summed in slot order.
//
// BS is a size (run time): the thread dispatches to a tile compiled for 1, 2, 4, 8 or 16 rows,
// else the next of those up with the rows past BS skipped (a warp-uniform branch). The spec's
// constraint BS * CPT <= 32 bounds the accumulators; tiles it excludes (TB * CPT > 32: the next
// power of two up from a BS that holds it never does) compile to nothing, so they cost no
// registers. The register count is still the largest compiled tile's: 96 at the defaults (CPT
// 2, the 16-row tile included), whatever BS the data has. Parameters (#defines): WX threads along
// columns, CPT columns per thread, WY block rows per block.
template <int TB>
__device__ __forceinline__ void bell_tile(const float* __restrict__ slots, const float* __restrict__ tiles,
                                          const float* __restrict__ B, float* __restrict__ C, int K, int N,
                                          int EC, int rows, int r0, int nr, int n0) {
  if (TB * CPT > 32) return;  // the spec's BS * CPT <= 32 never sends a BS here: no code, no registers
  float acc[TB][CPT];
#pragma unroll
  for (int i = 0; i < TB; ++i)
#pragma unroll
    for (int c = 0; c < CPT; ++c) acc[i][c] = 0.0f;
  const int area = rows * rows;
  for (int s = 0; s < EC; ++s) {
    const int bc = (int)__ldg(slots + s);
    if (bc < 0) break;  // padding follows the tiles
    const float* a = tiles + (long long)s * area;
    const int k0 = bc * rows, nk = min(rows, K - k0);
    for (int k = 0; k < nk; ++k) {
      const float* brow = B + (long long)(k0 + k) * N;
      float b[CPT];
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int j = n0 + c * WX;
        b[c] = j < N ? __ldg(brow + j) : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < TB; ++i)
        if (i < rows) {  // folded when exact; warp-uniform otherwise
          const float w = __ldg(a + i * rows + k);
#pragma unroll
          for (int c = 0; c < CPT; ++c) acc[i][c] = fmaf(w, b[c], acc[i][c]);
        }
    }
  }
#pragma unroll
  for (int i = 0; i < TB; ++i)
    if (i < nr)
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int j = n0 + c * WX;
        if (j < N) C[(long long)(r0 + i) * N + j] = acc[i][c];
      }
}

extern "C" __global__ void __launch_bounds__(WX * WY)
spmm_bell(const float* __restrict__ block_col, const float* __restrict__ values, const float* __restrict__ B,
          float* __restrict__ C, int M, int K, int N, int NNZ, int BS, int EC, float pattern) {
  const int br = blockIdx.y * WY + threadIdx.y;
  if (br * BS >= M) return;
  const int n0 = blockIdx.x * (WX * CPT) + threadIdx.x;
  const int r0 = br * BS, nr = min(BS, M - r0);
  const float* slots = block_col + (long long)br * EC;
  const float* tiles = values + (long long)br * EC * BS * BS;
  switch (BS) {
    case 1: return bell_tile<1>(slots, tiles, B, C, K, N, EC, 1, r0, nr, n0);
    case 2: return bell_tile<2>(slots, tiles, B, C, K, N, EC, 2, r0, nr, n0);
    case 4: return bell_tile<4>(slots, tiles, B, C, K, N, EC, 4, r0, nr, n0);
    case 8: return bell_tile<8>(slots, tiles, B, C, K, N, EC, 8, r0, nr, n0);
    case 16: return bell_tile<16>(slots, tiles, B, C, K, N, EC, 16, r0, nr, n0);
    default:  // the next tile up, rows bounded (the problem refuses BS > 16)
      if (BS < 4) return bell_tile<4>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0);
      if (BS < 8) return bell_tile<8>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0);
      return bell_tile<16>(slots, tiles, B, C, K, N, EC, BS, r0, nr, n0);
  }
}
