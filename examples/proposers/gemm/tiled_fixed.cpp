// 3. The blocked kernel with its tail fixed: the last tile is cut at N.
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * BM;
  const int i1 = i0 + BM < M ? i0 + BM : M;
  for (int j0 = 0; j0 < N; j0 += BN) {
    const int j1 = j0 + BN < N ? j0 + BN : N;
    for (int i = i0; i < i1; ++i)
      for (int j = j0; j < j1; ++j) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
        const long long e = (long long)i * N + j;
        C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
      }
  }
}
KF_KERNEL(gemm, body)
