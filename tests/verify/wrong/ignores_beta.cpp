// WRONG on purpose: ignores beta. Writes C = alpha*A*B and never reads C, which is right only
// when beta == 0 (the case a check with beta = 0, or with C zeroed, sees).
// Caught by: `bound` in a trial with beta != 0.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/ignores_beta.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float /*beta*/) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      C[(long long)i * N + j] = alpha * s;  // BUG: + beta*C missing
    }
}
KF_KERNEL(gemm, body)
