// spdnn for the cpu backend: the whole network in one launch, a tile of RB input rows per block
// carried through all L layers (spdnn_problem.cpp has the math).
//
// Why the whole network and not one launch per layer: rows are independent across all layers,
// so a block can keep its rows' activations in two scratch buffers of N x RB floats (128 KiB
// at N = 1024, RB = 16: L2) for the whole run; per-layer launches would write Y_l to memory and
// read it back L times and pay a barrier between layers. Every block streams the same weights
// (L x N x K indices and values), which the blocks running at the same time share in cache.
//
// Layout: the tile's activations neuron-major, act[i * RB + r], so output neuron j of all RB
// rows is one register tile of RB / VW vectors: acc = b_j, then for each of its K connections
// acc += w_t * act[i_t * RB : i_t * RB + RB] (the gather of RB floats is contiguous), then the
// ReLU and the clip. Rows past B are zeros and never stored.
//
// Dual sparsity: once every row of the tile is zero (the tile's rows have all died) and a
// layer's biases are all <= 0, that layer's output is exactly zero: it is skipped (a memset).
//
// Parameters (#defines): RB rows per tile (a multiple of the vector width), KU independent
// accumulator chains over a neuron's connections, VW floats per vector (0: the widest the
// compiler targets).
#include <cstring>
#include <vector>

#define RV (RB / KF_VW)
static_assert(RB % KF_VW == 0, "RB must be a multiple of the vector width");

static void spdnn_block(const kf_ctx& ctx, const float* Y0, const float* W_idx, const float* W_val,
                        const float* bias, float* Y, float* cat, int B, int N, int K, int L) {
  const int r0 = (int)ctx.block_idx.x * RB, nr = B - r0 < RB ? B - r0 : RB;
  thread_local std::vector<float> scratch;
  scratch.assign(2 * (size_t)N * RB, 0.0f);
  float* in = scratch.data();
  float* out = in + (size_t)N * RB;
  for (int r = 0; r < nr; ++r)  // transpose the tile's inputs to neuron-major
    for (int i = 0; i < N; ++i) in[(size_t)i * RB + r] = Y0[(size_t)(r0 + r) * N + i];
  bool tile_zero = false;
  const kf_vf zero = kf_splat(0.0f), clip = kf_splat(32.0f);
  for (int l = 0; l < L; ++l) {
    const float* idx = W_idx + (size_t)l * N * K;
    const float* val = W_val + (size_t)l * N * K;
    const float* b = bias + (size_t)l * N;
    if (tile_zero) {
      bool positive_bias = false;
      for (int j = 0; j < N; ++j) positive_bias |= b[j] > 0;
      if (!positive_bias) continue;  // zeros in, zeros out: `in` already holds them
    }
    kf_vf any = zero;
    for (int j = 0; j < N; ++j) {
      kf_vf acc[KU][RV];  // KU independent chains over the connections: FMA latency hidden
      for (int u = 0; u < KU; ++u)
        for (int v = 0; v < RV; ++v) acc[u][v] = kf_splat(u == 0 ? b[j] : 0.0f);
      const float* ij = idx + (size_t)j * K;
      const float* wj = val + (size_t)j * K;
      int t = 0;
      for (; t + KU <= K; t += KU)
        for (int u = 0; u < KU; ++u) {
          const float* x = in + (size_t)ij[t + u] * RB;
          const kf_vf w = kf_splat(wj[t + u]);
          for (int v = 0; v < RV; ++v) acc[u][v] += w * kf_load(x + v * KF_VW);
        }
      for (; t < K; ++t) {
        const float* x = in + (size_t)ij[t] * RB;
        const kf_vf w = kf_splat(wj[t]);
        for (int v = 0; v < RV; ++v) acc[0][v] += w * kf_load(x + v * KF_VW);
      }
      for (int u = 1; u < KU; ++u)
        for (int v = 0; v < RV; ++v) acc[0][v] += acc[u][v];
      for (int v = 0; v < RV; ++v) {
        kf_vf y = acc[0][v] > zero ? acc[0][v] : zero;  // ReLU (a NaN sum gives 0 either way here)
        y = y < clip ? y : clip;
        any = any > y ? any : y;
        kf_store(out + (size_t)j * RB + v * KF_VW, y);
      }
    }
    float* t = in;
    in = out;
    out = t;
    tile_zero = true;
    for (int e = 0; e < KF_VW; ++e) tile_zero = tile_zero && any[e] == 0.0f;
  }
  for (int r = 0; r < nr; ++r) {  // back to row-major, and the category
    float* y = Y + (size_t)(r0 + r) * N;
    bool alive = false;
    for (int i = 0; i < N; ++i) {
      y[i] = in[(size_t)i * RB + r];
      alive = alive || y[i] > 0.0f;
    }
    cat[r0 + r] = alive ? 1.0f : 0.0f;
  }
}

KF_KERNEL(spdnn, spdnn_block)
