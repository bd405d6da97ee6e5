// 1. Naive: each block computes BM rows of C, one dot product per element (i, j, k order: the
// inner loop walks B down a column, a stride of N floats).
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * BM;
  const int i1 = i0 + BM < M ? i0 + BM : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
