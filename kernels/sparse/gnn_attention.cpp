// gnn_attention for the cpu backend: per row r, an online softmax over its edges in chunks of
// 64 (the running maximum and sum of flash attention, so a row's scores are never all stored):
// each edge's score s = scale * Q[r,:] . K[c,:], the accumulator and the sum rescaled by
// exp(max_old - max_new) when a chunk raises the maximum, then out[r, strip] = acc / sum
// (gnn_attention_problem.hpp).
//
// The work split of gnn_aggregate.cpp: (ceil(N / BN) column strips) x (RBLOCKS row blocks of
// equal work by the cost prefix row_ptr[r] + r). A strip of more than one recomputes the scores;
// the default BN covers N = 64 in one.
//
// Parameters (#defines): BN columns per strip (the accumulator's length), RBLOCKS row blocks,
// VW floats per vector of the scores' dot products (0: the widest).
#include <cmath>

#include "kernels/common/equal_work_rows.hpp"  // first_row_at: equal-work row blocks

// exp(x) for x <= 0, flushed to 0 below fp32's normal range (x < -87.3): a weight that small is
// within the bound (gnn_attention_problem.hpp), and a subnormal one would make every multiply-add
// of its row of V take the processor's slow path (on this 2-core host the kernel ran 3x slower).
static inline float kf_weight(float x) { return x > -87.0f ? std::exp(x) : 0.0f; }

// q . k in vectors of KF_VW lanes (independent partial sums, not one chain of D dependent adds),
// then the lanes and a scalar tail.
static inline float dot_product(const float* q, const float* k, int D) {
  kf_vf part = {};
  int d = 0;
  for (; d + KF_VW <= D; d += KF_VW) part += kf_load(q + d) * kf_load(k + d);
  float dot = 0.0f;
  for (int l = 0; l < KF_VW; ++l) dot += part[l];
  for (; d < D; ++d) dot += q[d] * k[d];
  return dot;
}

static void attention_block(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* Q,
                            const float* K, const float* V, float* out, int M, int D, int N, int NNZ,
                            float pattern, float scale) {
  (void)NNZ, (void)pattern;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const long long nb = ctx.grid_dim.y, b = ctx.block_idx.y;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  // The strip's accumulator: nv whole vectors, then a scalar tail (vectors written out, since a
  // loop over a runtime count below BN was unrolled into scalar multiply-adds instead).
  kf_vf acc[BN / KF_VW];
  float tail[KF_VW], score[64];
  const int nv = nc / KF_VW, t0 = nv * KF_VW;
  for (int r = r0; r < r1; ++r) {
    const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
    for (int v = 0; v < nv; ++v) acc[v] = kf_splat(0.0f);
    for (int j = t0; j < nc; ++j) tail[j - t0] = 0.0f;
    float mx = -INFINITY, sum = 0.0f;
    const float* q = Q + (long long)r * D;
    // Edges in chunks of up to 64: the chunk's scores first (independent dot products, so the
    // gathers of K's rows overlap instead of waiting on the maximum's branch), then one
    // rescaling at most, then the weighted rows of V.
    for (int pc = p0; pc < p1; pc += 64) {
      const int n = p1 - pc < 64 ? p1 - pc : 64;
      float cmax = -INFINITY;
      for (int i = 0; i < n; ++i) {
        score[i] = scale * dot_product(q, K + (long long)col_idx[pc + i] * D, D);
        cmax = score[i] > cmax ? score[i] : cmax;
      }
      if (cmax > mx) {  // a new maximum: what was summed so far shrinks by exp(old - new)
        const float f = kf_weight(mx - cmax);
        sum *= f;
        for (int v = 0; v < nv; ++v) acc[v] *= kf_splat(f);
        for (int j = t0; j < nc; ++j) tail[j - t0] *= f;
        mx = cmax;
      }
      for (int i = 0; i < n; ++i) {
        const float w = kf_weight(score[i] - mx);
        sum += w;
        const float* vrow = V + (long long)col_idx[pc + i] * N + n0;
        const kf_vf wv = kf_splat(w);
        for (int v = 0; v < nv; ++v) acc[v] += wv * kf_load(vrow + v * KF_VW);
        for (int j = t0; j < nc; ++j) tail[j - t0] += w * vrow[j];
      }
    }
    const float inv = p1 > p0 ? 1.0f / sum : 0.0f;  // a row without edges: 0
    float* o = out + (long long)r * N + n0;
    for (int v = 0; v < nv; ++v) kf_store(o + v * KF_VW, acc[v] * kf_splat(inv));
    for (int j = t0; j < nc; ++j) o[j] = tail[j - t0] * inv;
  }
}

KF_KERNEL(gnn_attention, attention_block)
