// WRONG on purpose: moe_grouped_gemm (Y[t] = sum_k gate[t,k] * X[t] * W[ids[t,k]]; X (T,H), ids and
// gate (T,K), W (E,H,F), Y (T,F)) as a plain loop over tokens, correct but for the start of token
// t's row of X, formed in 32-bit `int` (t * H), as a plain loop nest naturally writes it. Every
// shape whose X stays below 2^31 elements gets the right answer, so every random, structured and
// fuzzed trial passes it. Its twin with 64-bit offsets is tests/data/moe_64bit_token_index.cpp
// (and the library's kernels), which pass the same check.
// Caught by: `index_width` (thorough mode, cpu backend): T = 2^16 + 1 tokens of H = 2^15 (F = 16,
//   E = 2, K = 1), X mapped on the zero page but for its last two tokens; token 2^16 starts at
//   flat index 2^31, where t * H wraps to -2^31, so the kernel reads 8 GiB before X: the worker
//   faults in the index_width run (crashed, failed_check index_width), or, where something is
//   mapped there, multiplies the wrong row (incorrect, index_width). Quick mode passes it.
//   build/kforge eval --problem moe_grouped_gemm --lang cpp --entry moe \
//     --source tests/verify/wrong/moe_int32_token_index.cpp --grid 'ceil_div(T,16)' --size T=37,H=50,F=24,E=4,K=2 --json
static void body(const kf_ctx& ctx, const float* X, const float* ids, const float* gate, const float* W, float* Y,
                 int T, int H, int F, int E, int K) {
  (void)E;
  const int t0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int t1 = t0 + 16 < T ? t0 + 16 : T;
  for (int t = t0; t < t1; ++t) {
    float* y = Y + static_cast<long long>(t) * F;
    for (int f = 0; f < F; ++f) y[f] = 0.0f;
    const float* x = X + t * H;  // BUG: t * H in 32 bits
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
