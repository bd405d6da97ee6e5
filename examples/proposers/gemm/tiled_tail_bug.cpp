// 2. Blocked over columns in tiles of BN, but WRONG: the loop stops at the last whole tile, so
// when N is not a multiple of BN the last N % BN columns of C are never written.
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * BM;
  const int i1 = i0 + BM < M ? i0 + BM : M;
  for (int j0 = 0; j0 + BN <= N; j0 += BN)
    for (int i = i0; i < i1; ++i)
      for (int j = j0; j < j0 + BN; ++j) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
        const long long e = (long long)i * N + j;
        C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
      }
}
KF_KERNEL(gemm, body)
