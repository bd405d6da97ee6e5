// spdnn for the cpu backend: the whole network in one launch; a block carries TILES tiles of RB
// input rows through all L layers (spdnn_problem.cpp has the math).
//
// Why the whole network and not one launch per layer: rows are independent across all layers,
// so a block can keep its rows' activations in two scratch buffers (TILES x N x RB floats
// each) for the whole run; per-layer launches would write Y_l to memory and read it back L
// times and pay a barrier between layers. Every block streams the same weights (L x N x K
// indices and values), which the blocks running at the same time share in cache.
//
// Layout: a tile's activations neuron-major, act[i * RB + lane], so output neuron j of the
// tile's RB rows is one register tile of RB / VW vectors: acc = b_j, then for each of its K
// connections acc += w_t * act[i_t * RB : i_t * RB + RB] (the gather of RB floats is
// contiguous; KU independent chains hide the FMA latency), then the ReLU and the clip.
//
// Dual sparsity, live-row compaction: a row that is all zero after layer l stays all zero when
// every later layer's biases are <= 0 (z = b <= 0 at every neuron). So after such a layer the
// block drops its dead rows (their output is zeros, category 0) and packs the live ones into
// the first tiles: later layers run only ceil(live / RB) tiles. Rows die early in the
// challenge's networks, so most of the work goes to the rows that survive. The lanes past the
// live count in the last tile are computed and never read.
//
// Parameters (#defines): RB rows per tile (a multiple of the vector width), TILES tiles per
// block (the rows that compact together), KU accumulator chains, VW floats per vector (0: the
// widest the compiler targets).
#include <vector>

#define RV (RB / KF_VW)
static_assert(RB % KF_VW == 0, "RB must be a multiple of the vector width");

// One layer over `tiles` tiles: out = min(max(in W + b, 0), 32); alive[s] = 1 if slot s's row
// has a nonzero output.
static void layer(const float* in, float* out, const int* idx, const float* val, const float* b, int N, int K,
                  int tiles, unsigned char* alive) {
  const kf_vf zero = kf_splat(0.0f), clip = kf_splat(32.0f);
  for (int tile = 0; tile < tiles; ++tile) {
    const float* x0 = in + (size_t)tile * N * RB;
    float* y0 = out + (size_t)tile * N * RB;
    kf_vf any[RV];
    for (int v = 0; v < RV; ++v) any[v] = zero;
    for (int j = 0; j < N; ++j) {
      kf_vf acc[KU][RV];
      for (int u = 0; u < KU; ++u)
        for (int v = 0; v < RV; ++v) acc[u][v] = kf_splat(u == 0 ? b[j] : 0.0f);
      const int* ij = idx + (size_t)j * K;
      const float* wj = val + (size_t)j * K;
      int t = 0;
      for (; t + KU <= K; t += KU)
        for (int u = 0; u < KU; ++u) {
          const float* x = x0 + (size_t)ij[t + u] * RB;
          const kf_vf w = kf_splat(wj[t + u]);
          for (int v = 0; v < RV; ++v) acc[u][v] += w * kf_load(x + v * KF_VW);
        }
      for (; t < K; ++t) {
        const float* x = x0 + (size_t)ij[t] * RB;
        const kf_vf w = kf_splat(wj[t]);
        for (int v = 0; v < RV; ++v) acc[0][v] += w * kf_load(x + v * KF_VW);
      }
      for (int u = 1; u < KU; ++u)
        for (int v = 0; v < RV; ++v) acc[0][v] += acc[u][v];
      for (int v = 0; v < RV; ++v) {
        kf_vf y = acc[0][v] > zero ? acc[0][v] : zero;  // ReLU
        y = y < clip ? y : clip;
        any[v] = any[v] > y ? any[v] : y;
        kf_store(y0 + (size_t)j * RB + v * KF_VW, y);
      }
    }
    for (int v = 0; v < RV; ++v)
      for (int e = 0; e < KF_VW; ++e) alive[tile * RB + v * KF_VW + e] = any[v][e] > 0.0f;
  }
}

// Slot s lives in tile s / RB, lane s % RB.
static inline float* slot_at(float* act, int N, int s, int i) {
  return act + (size_t)(s / RB) * N * RB + (size_t)i * RB + s % RB;
}

static void spdnn_block(const kf_ctx& ctx, const float* Y0, const int* W_idx, const float* W_val,
                        const float* bias, float* Y, float* cat, int B, int N, int K, int L) {
  const int r0 = (int)ctx.block_idx.x * (RB * TILES), nr = B - r0 < RB * TILES ? B - r0 : RB * TILES;
  thread_local std::vector<float> scratch;
  thread_local std::vector<int> row_of;  // slot -> row of this block
  thread_local std::vector<unsigned char> alive, later_nonpositive;
  scratch.assign(2 * (size_t)TILES * N * RB, 0.0f);
  row_of.resize(RB * TILES);
  alive.assign(RB * TILES, 0);
  // later_nonpositive[l]: every bias of layers l .. L-1 is <= 0 (a dead row stays dead).
  later_nonpositive.assign(L + 1, 1);
  for (int l = L - 1; l >= 0; --l) {
    bool ok = later_nonpositive[l + 1];
    for (int j = 0; ok && j < N; ++j) ok = bias[(size_t)l * N + j] <= 0.0f;
    later_nonpositive[l] = ok;
  }
  float* in = scratch.data();
  float* out = in + (size_t)TILES * N * RB;
  for (int s = 0; s < nr; ++s) {  // the block's inputs, neuron-major per tile
    row_of[s] = s;
    for (int i = 0; i < N; ++i) *slot_at(in, N, s, i) = Y0[(size_t)(r0 + s) * N + i];
  }
  int live = nr;
  for (int l = 0; l < L && live > 0; ++l) {
    layer(in, out, W_idx + (size_t)l * N * K, W_val + (size_t)l * N * K, bias + (size_t)l * N, N, K,
          (live + RB - 1) / RB, alive.data());
    float* t = in;
    in = out;
    out = t;
    if (l + 1 < L && later_nonpositive[l + 1]) {  // drop the dead rows, pack the live ones
      int kept = 0;
      for (int s = 0; s < live; ++s) {
        if (!alive[s]) {
          float* y = Y + (size_t)(r0 + row_of[s]) * N;
          for (int i = 0; i < N; ++i) y[i] = 0.0f;
          cat[r0 + row_of[s]] = 0.0f;
          continue;
        }
        if (kept != s) {
          for (int i = 0; i < N; ++i) *slot_at(in, N, kept, i) = *slot_at(in, N, s, i);
          row_of[kept] = row_of[s];
        }
        ++kept;
      }
      live = kept;
    }
  }
  for (int s = 0; s < live; ++s) {  // back to row-major, and the category
    float* y = Y + (size_t)(r0 + row_of[s]) * N;
    bool any = false;
    for (int i = 0; i < N; ++i) {
      y[i] = *slot_at(in, N, s, i);
      any = any || y[i] > 0.0f;
    }
    cat[r0 + row_of[s]] = any ? 1.0f : 0.0f;
  }
}

KF_KERNEL(spdnn, spdnn_block)
