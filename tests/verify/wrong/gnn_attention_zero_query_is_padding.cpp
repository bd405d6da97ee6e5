// WRONG on purpose: graph attention that treats a node whose query row Q[r, :] is all zeros as
// padding (as batched attention code masks padded tokens) and leaves its output row unwritten.
// A zero query is a real node whose scores are all equal: its output is the mean of its
// neighbours' rows of V. Drawn element by element no row of Q is all zero (and the special
// scalar scale = 0 makes the scores equal without zeroing Q), so random trials and the special
// scalars pass it.
// Caught by: `structured` (the zero_rows pattern zeroes every third row of Q; the element check
//   inside is `poison`: the skipped rows still hold the untouched pattern). Quick mode passes it.
//   build/kforge eval --problem gnn_attention --lang cpp --grid M \
//     --source tests/verify/wrong/gnn_attention_zero_query_is_padding.cpp \
//     --size M=67,D=32,N=13,NNZ=500 --thorough --json
// Otherwise right: one block per node, the edge softmax (max subtracted) and the sum in double.
#include <cmath>
#include <vector>

static void body(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* Q, const float* K,
                 const float* V, float* out, int M, int D, int N, int NNZ, float pattern, float scale) {
  (void)M, (void)NNZ, (void)pattern;
  const int r = (int)ctx.block_idx.x, p0 = (int)row_ptr[r], p1 = (int)row_ptr[r + 1];
  const float* q = Q + (long long)r * D;
  bool padding = true;
  for (int d = 0; d < D; ++d) padding = padding && q[d] == 0.0f;
  if (padding) return;  // BUG: a zero query is a node with uniform weights, not padding
  std::vector<double> s(p1 - p0);
  double mx = -INFINITY;
  for (int p = p0; p < p1; ++p) {
    double dot = 0;
    for (int d = 0; d < D; ++d) dot += (double)q[d] * K[(long long)col_idx[p] * D + d];
    s[p - p0] = scale * dot;
    mx = std::fmax(mx, s[p - p0]);
  }
  double den = 0;
  for (double& v : s) den += (v = std::exp(v - mx));
  for (int j = 0; j < N; ++j) {
    double acc = 0;
    for (int p = p0; p < p1; ++p) acc += s[p - p0] * V[(long long)(int)col_idx[p] * N + j];
    out[(long long)r * N + j] = p1 > p0 ? (float)(acc / den) : 0.0f;
  }
}
KF_KERNEL(gnn_attention, body)
