// WRONG on purpose, a tail bug: K is walked in tiles of 8 and a partial last tile is dropped.
// The default K (32) is a multiple of 8, so KernelBench's check passes.
static void body(const kf_ctx& ctx, const float* A, const float* B, float* out, int M, int K, int N) {
  (void)ctx;
  for (int i = 0; i < M; ++i) {
    float* c = out + (long long)i * N;
    for (int j = 0; j < N; ++j) c[j] = 0.0f;
    for (int k0 = 0; k0 + 8 <= K; k0 += 8)
      for (int k = k0; k < k0 + 8; ++k) {
        const float a = A[(long long)i * K + k];
        const float* b = B + (long long)k * N;
        for (int j = 0; j < N; ++j) c[j] += a * b[j];
      }
  }
}
KF_KERNEL(kb_3_matmul, body)
