// 4. Faster: i, k, j order. Each row of C accumulates alpha * A[i][k] * (row k of B) in a local
// buffer, so the inner loop reads B and writes the buffer with unit stride and vectorizes.
static void body(const kf_ctx& ctx, const float* __restrict A, const float* __restrict B,
                 float* __restrict C, int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * BM;
  const int i1 = i0 + BM < M ? i0 + BM : M;
  float acc[4096];
  for (int i = i0; i < i1; ++i)
    for (int j0 = 0; j0 < N; j0 += 4096) {
      const int jn = N - j0 < 4096 ? N - j0 : 4096;
      for (int j = 0; j < jn; ++j) acc[j] = 0.0f;
      for (int k = 0; k < K; ++k) {
        const float a = A[(long long)i * K + k];
        const float* b = B + (long long)k * N + j0;
        for (int j = 0; j < jn; ++j) acc[j] += a * b[j];
      }
      float* c = C + (long long)i * N + j0;
      for (int j = 0; j < jn; ++j) c[j] = beta != 0.0f ? alpha * acc[j] + beta * c[j] : alpha * acc[j];
    }
}
KF_KERNEL(gemm, body)
