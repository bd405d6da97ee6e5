// moe_grouped_gemm for the opencl backend: dispatch, grouped GEMM and combine in ONE launch.
//
// Each work-group owns the output strip Y[t0:t0+TCHUNK, n0:n0+BN] (grid: column blocks x token
// chunks), so the combine needs no atomics on Y: only this work-group writes these elements.
// It walks the experts in order; for expert e it first gathers its rows, the (token, slot)
// pairs of its chunk routed to e, into a local list (a scan of the chunk's ids with a local
// counter), then runs the tiles (e, row block of BM gathered rows, this column block): A slices
// gathered from X and W[e] slices staged in local memory, BM x BN accumulated in registers,
// then Y[token, :] += gate * tile. Experts with no row cost one scan of the ids; no padding to
// a capacity, no per-expert launch. The order within a list may vary from run to run, but each
// row's sum does not depend on its place, and a token's K contributions are added in expert
// order: the result is deterministic.
//
// A schedule per work-group (not a global one) is the price of one launch with no scratch
// buffer: the ids are scanned once per expert per work-group, O(E * TCHUNK * K), small beside
// the GEMM's O(TCHUNK * K * H * BN).
//
// Parameters (all #defines):
//   BM, BN   the tile (gathered rows, columns)     KT  reduction slice in local memory
//   WX, WY   work-items along columns and rows     TCHUNK  tokens per work-group
#define RM (BM / WY)
#define RN (BN / WX)
#define NT (WX * WY)

__kernel void moe_grouped_gemm(__global const float* X, __global const float* ids,
                               __global const float* gate, __global const float* W,
                               __global float* Y, int T, int H, int F, int E, int K) {
  __local int list[2 * TCHUNK];  // K <= 2
  __local int count;
  __local float As[KT][BM];
  __local float Bs[KT][BN];
  const int lx = get_local_id(0), ly = get_local_id(1), lid = ly * WX + lx;
  const int n0 = get_group_id(0) * BN, t0 = get_group_id(1) * TCHUNK;
  const int tc = min(TCHUNK, T - t0), nc = min(BN, F - n0);

  for (int i = lid; i < tc * nc; i += NT) Y[(long)(t0 + i / nc) * F + n0 + i % nc] = 0.0f;
  barrier(CLK_GLOBAL_MEM_FENCE);

  for (int e = 0; e < E; ++e) {
    if (lid == 0) count = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = lid; i < tc * K; i += NT)
      if ((int)ids[t0 * K + i] == e) list[atomic_inc(&count)] = t0 * K + i;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int n = count;
    __global const float* We = W + (long)e * H * F;
    for (int r0 = 0; r0 < n; r0 += BM) {
      float acc[RM][RN];
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) acc[i][j] = 0.0f;
      for (int k0 = 0; k0 < H; k0 += KT) {
        for (int i = lid; i < BM * KT; i += NT) {  // dispatch: gather KT columns of BM rows
          const int r = i / KT, k = i % KT;
          As[k][r] = r0 + r < n && k0 + k < H ? X[(long)(list[r0 + r] / K) * H + k0 + k] : 0.0f;
        }
        for (int i = lid; i < KT * BN; i += NT) {
          const int k = i / BN, j = i % BN;
          Bs[k][j] = k0 + k < H && j < nc ? We[(long)(k0 + k) * F + n0 + j] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < KT; ++k) {
          float a[RM], b[RN];
          for (int i = 0; i < RM; ++i) a[i] = As[k][ly + i * WY];
          for (int j = 0; j < RN; ++j) b[j] = Bs[k][lx + j * WX];
          for (int i = 0; i < RM; ++i)
            for (int j = 0; j < RN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      for (int i = 0; i < RM; ++i) {  // combine: a token is at most once in an expert's list
        const int r = r0 + ly + i * WY;
        if (r >= n) continue;
        const int p = list[r];
        const float g = gate[p];
        __global float* y = Y + (long)(p / K) * F + n0;
        for (int j = 0; j < RN; ++j)
          if (lx + j * WX < nc) y[lx + j * WX] += g * acc[i][j];
      }
      barrier(CLK_GLOBAL_MEM_FENCE);  // the next tile may add to the same elements
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // the list is rebuilt for the next expert
  }
}
