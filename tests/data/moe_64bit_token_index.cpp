// CORRECT: moe_grouped_gemm as a plain loop over tokens, the row offsets in 64 bits. The twin of
// tests/verify/wrong/moe_int32_token_index.cpp: it passes the index_width check that rejects the
// twin (tests/verify/index_width_conv_moe_attention_test.cpp).
//   build/kforge eval --problem moe_grouped_gemm --lang cpp --entry moe \
//     --source tests/data/moe_64bit_token_index.cpp --grid 'ceil_div(T,16)' --size T=37,H=50,F=24,E=4,K=2 --json
static void body(const kf_ctx& ctx, const float* X, const float* ids, const float* gate, const float* W, float* Y,
                 int T, int H, int F, int E, int K) {
  (void)E;
  const int t0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int t1 = t0 + 16 < T ? t0 + 16 : T;
  for (int t = t0; t < t1; ++t) {
    float* y = Y + static_cast<long long>(t) * F;
    for (int f = 0; f < F; ++f) y[f] = 0.0f;
    const float* x = X + static_cast<long long>(t) * H;  // 64 bits
    for (int k = 0; k < K; ++k) {
      const float g = gate[t * K + k];
      const float* we = W + static_cast<long long>(ids[t * K + k]) * H * F;
      for (int h = 0; h < H; ++h) {
        const float a = g * x[h];
        const float* wh = we + static_cast<long long>(h) * F;
        for (int f = 0; f < F; ++f) y[f] += a * wh[f];
      }
    }
  }
}
KF_KERNEL(moe, body)
