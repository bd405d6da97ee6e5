// WRONG on purpose: conv2d (NCHW, x (N,C,H,W) * w (K,C,R,S) -> y (N,K,P,Q)), a correct direct
// convolution but for the start of image n in x, formed in 32-bit `int` (n * C * H * W), as a
// plain loop nest naturally writes it (y's image offset too). Every shape whose x stays below
// 2^31 elements gets the right answer, so every random, structured and fuzzed trial passes it.
// Its twin with 64-bit offsets is tests/data/conv2d_64bit_image_index.cpp (and the library's
// kernels), which pass the same check.
// Caught by: `index_width` (thorough mode, cpu backend): conv2d at N = 2^16 + 1 images of
//   C = 2048 x 4 x 4 (1x1 window, K = 8), x mapped on the zero page but for its last two images;
//   image 2^16 starts at flat index 2^31, where n * C * H * W wraps to -2^31, so the kernel
//   reads 8 GiB before x: the worker faults in the index_width run (crashed, failed_check
//   index_width), or, where something is mapped there, convolves the wrong image (incorrect,
//   index_width). Quick mode passes it.
//   build/kforge eval --problem conv2d --lang cpp --entry conv2d \
//     --source tests/verify/wrong/conv2d_int32_image_index.cpp --grid N --size N=3,C=5,H=7,W=6,K=4,R=1,S=1,stride=1,pad=0,dil=1 --json
#include <vector>

static void body(const kf_ctx& ctx, const kf_storage* x, const kf_storage* w, kf_storage* y, int N, int C,
                 int H, int W, int K, int R, int S, int stride, int pad, int dil) {
  (void)N;
  const int n = static_cast<int>(ctx.block_idx.x);
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1, Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const kf_storage* xn = x + n * C * H * W;  // BUG: n * C * H * W in 32 bits
  kf_storage* yn = y + n * K * P * Q;        // BUG: the same for y
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
