// CORRECT: attention as plain loops, one (head, batch) per block, the head offsets in 64 bits.
// The twin of tests/verify/wrong/attention_int32_batch_index.cpp: it passes the index_width check
// that rejects the twin (tests/verify/index_width_conv_moe_attention_test.cpp, long suite).
//   build/kforge eval --problem attention --lang cpp --entry attention --grid 'H,B' \
//     --source tests/data/attention_64bit_batch_index.cpp --size B=2,H=4,HKV=2,S=19,D=16 --timeout 600 --json
#include <cmath>
#include <vector>

// cos(pos * theta_d) at [pos * half + d], sin after them; built once per thread and shape (the
// trigonometry per block would cost more than the attention at small S).
static const float* rope_table(int S, int D, float base) {
  static thread_local std::vector<float> t;
  static thread_local int ts = -1, td = -1;
  static thread_local float tb = 0;
  if (ts == S && td == D && tb == base) return t.data();
  const int half = D / 2;
  t.assign(2 * static_cast<std::size_t>(S) * half, 0.0f);
  for (int pos = 0; pos < S; ++pos)
    for (int d = 0; d < half; ++d) {
      const double theta = std::pow(static_cast<double>(base), -2.0 * d / D);
      t[static_cast<std::size_t>(pos) * half + d] = static_cast<float>(std::cos(pos * theta));
      t[static_cast<std::size_t>(S + pos) * half + d] = static_cast<float>(std::sin(pos * theta));
    }
  ts = S, td = D, tb = base;
  return t.data();
}

static void body(const kf_ctx& ctx, const kf_storage* Q, const kf_storage* K, const kf_storage* V, kf_storage* O,
                 int B, int H, int HKV, int S, int D, float scale, float rope_base, float causal) {
  (void)B;
  const int h = static_cast<int>(ctx.block_idx.x), b = static_cast<int>(ctx.block_idx.y);
  const int g = h / (H / HKV), half = D / 2;
  const kf_storage* q = Q + (static_cast<long long>(b) * H + h) * S * D;
  const kf_storage* k = K + (static_cast<long long>(b) * HKV + g) * S * D;
  const kf_storage* v = V + (static_cast<long long>(b) * HKV + g) * S * D;
  kf_storage* o = O + (static_cast<long long>(b) * H + h) * S * D;
  const float* cs = rope_table(S, D, rope_base);
  const float* sn = cs + static_cast<std::size_t>(S) * half;
  std::vector<float> qr(static_cast<std::size_t>(S) * D), kr(qr.size()), p(S), acc(D);
  for (int i = 0; i < S; ++i)
    for (int d = 0; d < half; ++d) {
      const float c = cs[i * half + d], s = sn[i * half + d];
      const float a = kf_to_f32(q[i * D + d]), a2 = kf_to_f32(q[i * D + d + half]);
      qr[i * D + d] = a * c - a2 * s, qr[i * D + d + half] = a2 * c + a * s;
      const float x = kf_to_f32(k[i * D + d]), x2 = kf_to_f32(k[i * D + d + half]);
      kr[i * D + d] = x * c - x2 * s, kr[i * D + d + half] = x2 * c + x * s;
    }
  for (int i = 0; i < S; ++i) {
    const int seen = causal != 0.0f ? i + 1 : S;
    float mx = -INFINITY;
    for (int j = 0; j < seen; ++j) {
      float dot = 0.0f;
      for (int d = 0; d < D; ++d) dot += qr[i * D + d] * kr[j * D + d];
      p[j] = scale * dot;
      mx = p[j] > mx ? p[j] : mx;
    }
    float sum = 0.0f;
    for (int j = 0; j < seen; ++j) sum += p[j] = std::exp(p[j] - mx);
    for (int d = 0; d < D; ++d) acc[d] = 0.0f;
    for (int j = 0; j < seen; ++j)
      for (int d = 0; d < D; ++d) acc[d] += p[j] * kf_to_f32(v[j * D + d]);
    for (int d = 0; d < D; ++d) o[i * D + d] = kf_from_f32(acc[d] / sum);
  }
}
KF_KERNEL(attention, body)
