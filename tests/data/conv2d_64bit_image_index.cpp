// CORRECT: conv2d (NCHW) as a plain direct convolution, one image per block, the image offsets
// in 64 bits. The twin of tests/verify/wrong/conv2d_int32_image_index.cpp: it passes the
// index_width check that rejects the twin (tests/verify/index_width_conv_moe_attention_test.cpp).
//   build/kforge eval --problem conv2d --lang cpp --entry conv2d \
//     --source tests/data/conv2d_64bit_image_index.cpp --grid N --size N=3,C=5,H=7,W=6,K=4,R=1,S=1,stride=1,pad=0,dil=1 --json
#include <vector>

static void body(const kf_ctx& ctx, const kf_storage* x, const kf_storage* w, kf_storage* y, int N, int C,
                 int H, int W, int K, int R, int S, int stride, int pad, int dil) {
  (void)N;
  const int n = static_cast<int>(ctx.block_idx.x);
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1, Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const kf_storage* xn = x + static_cast<long long>(n) * C * H * W;  // 64 bits
  kf_storage* yn = y + static_cast<long long>(n) * K * P * Q;
  std::vector<float> acc(static_cast<std::size_t>(P) * Q);  // one output plane at a time
  for (int k = 0; k < K; ++k) {
    for (int e = 0; e < P * Q; ++e) acc[e] = 0.0f;
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
          const float wv = kf_to_f32(w[((k * C + c) * R + r) * S + s]);
          for (int p = 0; p < P; ++p) {
            const int h = p * stride - pad + r * dil;
            if (h < 0 || h >= H) continue;
            const kf_storage* row = xn + (c * H + h) * W;
            for (int q = 0; q < Q; ++q) {
              const int v = q * stride - pad + s * dil;
              if (v >= 0 && v < W) acc[p * Q + q] += wv * kf_to_f32(row[v]);
            }
          }
        }
    for (int e = 0; e < P * Q; ++e) yn[k * P * Q + e] = kf_from_f32(acc[e]);
  }
}
KF_KERNEL(conv2d, body)
