// WRONG on purpose: a GNN aggregation that scales each incoming message H[c, :] by its largest
// magnitude before summing (a "range guard") and multiplies back: m_c * sum(w * H[c, :] / m_c).
// A node whose features are all zero gives m_c = 0 and 0/0 = NaN in every row it sends to.
// Features drawn element by element are never all zero for a node, so random trials pass it.
// Caught by: `structured` (the zero_rows pattern makes every third node's features zero; the
//   element check inside is `finite`). Quick mode (random inputs only) passes it.
//   build/kforge eval --problem gnn_aggregate --lang cpp --grid M \
//     --source tests/verify/wrong/gnn_aggregate_divides_by_row_max.cpp \
//     --size M=71,N=29,NNZ=400 --thorough --json
// Otherwise right: one block per node, GCN's normalized sum (kind 0) or the mean (kind 1).
#include <cmath>

static void body(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* H, float* out, int M,
                 int N, int NNZ, float pattern, float kind) {
  (void)M, (void)NNZ, (void)pattern;
  const bool gcn = kind == 0.0f;
  const int r = (int)ctx.block_idx.x, p0 = (int)row_ptr[r], p1 = (int)row_ptr[r + 1];
  const double len_r = p1 - p0;
  for (int j = 0; j < N; ++j) out[(long long)r * N + j] = 0.0f;
  auto add = [&](int c, double w) {
    float m = 0.0f;
    for (int j = 0; j < N; ++j) m = std::fmax(m, std::fabs(H[(long long)c * N + j]));
    for (int j = 0; j < N; ++j)  // BUG: m may be 0
      out[(long long)r * N + j] += (float)(m * (w * (H[(long long)c * N + j] / m)));
  };
  if (gcn) add(r, 1 / (1 + len_r));
  for (int p = p0; p < p1; ++p) {
    const int c = (int)col_idx[p];
    const double len_c = row_ptr[c + 1] - row_ptr[c];
    add(c, gcn ? 1 / std::sqrt((1 + len_r) * (1 + len_c)) : 1 / len_r);
  }
}
KF_KERNEL(gnn_aggregate, body)
