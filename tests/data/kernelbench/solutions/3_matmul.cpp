// C (M,N) = A (M,K) B (K,N), row-major, i-k-j order with a float accumulator row.
static void body(const kf_ctx& ctx, const float* A, const float* B, float* out, int M, int K, int N) {
  (void)ctx;
  for (int i = 0; i < M; ++i) {
    float* c = out + (long long)i * N;
    for (int j = 0; j < N; ++j) c[j] = 0.0f;
    for (int k = 0; k < K; ++k) {
      const float a = A[(long long)i * K + k];
      const float* b = B + (long long)k * N;
      for (int j = 0; j < N; ++j) c[j] += a * b[j];
    }
  }
}
KF_KERNEL(kb_3_matmul, body)
