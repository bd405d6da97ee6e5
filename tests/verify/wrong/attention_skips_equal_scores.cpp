// WRONG on purpose: an attention kernel with a "no information" shortcut: a query whose dot
// products with every visible key are equal (its softmax is uniform) is skipped, and its row of
// O is left unwritten (the right output is the mean of the visible rows of V). With inputs drawn
// element by element no query row is ever all zero, so random trials pass it; scale = 0 (the
// special scalar that makes the weights uniform) does not trip it either, since it tests the
// dot products before scaling.
// Caught by: `structured` (thorough mode's zero_rows and subnormal_inputs patterns give query
//   rows of zeros, so equal scores; the element check inside is `poison`: the skipped rows of O
//   still hold the untouched pattern). Quick mode (random inputs only) passes it.
//   build/kforge eval --problem attention --lang cpp --grid 'H,B' \
//     --source tests/verify/wrong/attention_skips_equal_scores.cpp \
//     --size B=1,H=4,HKV=2,S=40,D=32 --thorough --json
// Otherwise right (fp32): rotate-half RoPE at base rope_base, grouped-query heads, causal mask,
// softmax with its maximum subtracted, all in double. One block per (head, batch).
#include <cmath>
#include <vector>

static void body(const kf_ctx& ctx, const float* Q, const float* K, const float* V, float* O,  // (B,H,S,D) (B,HKV,S,D) x2 (B,H,S,D)
                 int B, int H, int HKV, int S, int D, float scale, float rope_base, float causal_flag) {
  (void)B;
  const int h = static_cast<int>(ctx.block_idx.x), b = static_cast<int>(ctx.block_idx.y);
  const int g = h / (H / HKV), half = D / 2;
  const float* q_head = Q + (static_cast<long long>(b) * H + h) * S * D;
  const float* k_head = K + (static_cast<long long>(b) * HKV + g) * S * D;
  const float* v_head = V + (static_cast<long long>(b) * HKV + g) * S * D;
  float* o_head = O + (static_cast<long long>(b) * H + h) * S * D;
  // RoPE of a row at position pos: (a, b) pairs (d, d + D/2) rotated by pos * base^(-2d/D).
  const auto rope = [&](const float* x, int pos, std::vector<double>& r) {
    for (int d = 0; d < half; ++d) {
      const double theta = pos * std::pow(static_cast<double>(rope_base), -2.0 * d / D);
      const double c = std::cos(theta), s = std::sin(theta), x0 = x[d], x1 = x[d + half];
      r[d] = x0 * c - x1 * s;
      r[d + half] = x1 * c + x0 * s;
    }
  };
  std::vector<std::vector<double>> keys(S, std::vector<double>(D));
  for (int j = 0; j < S; ++j) rope(k_head + static_cast<long long>(j) * D, j, keys[j]);
  std::vector<double> q(D), dot(S);
  for (int i = 0; i < S; ++i) {
    rope(q_head + static_cast<long long>(i) * D, i, q);
    const int n = causal_flag != 0.0f ? i + 1 : S;
    double lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int d = 0; d < D; ++d) s += q[d] * keys[j][d];
      dot[j] = s;
      lo = s < lo ? s : lo;
      hi = s > hi ? s : hi;
    }
    if (n > 1 && lo == hi) continue;  // BUG: uniform weights still need O = mean of V's rows
    double l = 0;
    std::vector<double> acc(D, 0.0);
    for (int j = 0; j < n; ++j) {
      const double p = std::exp(scale * (dot[j] - hi));  // hi is the max score for scale >= 0
      l += p;
      for (int d = 0; d < D; ++d) acc[d] += p * v_head[static_cast<long long>(j) * D + d];
    }
    for (int d = 0; d < D; ++d) o_head[static_cast<long long>(i) * D + d] = static_cast<float>(acc[d] / l);
  }
}
KF_KERNEL(attention, body)
