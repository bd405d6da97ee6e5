// WRONG on purpose: produces NaN. The epilogue is "simplified" to C = beta*((alpha/beta)*s + C)
// (C not read when beta == 0), which is right for every beta != 0 and NaN for beta == 0:
// alpha/0 = Inf, Inf*s = ±Inf (NaN where s = 0), and 0*Inf = NaN, a NaN the hardware makes, not
// the verifier's poison pattern.
// Caught by: `finite` (NaN where the reference is finite) in a trial with beta == 0.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/nan_beta_zero.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  const float ratio = alpha / beta;  // BUG: Inf when beta == 0
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      const float c = beta != 0.0f ? C[e] : 0.0f;
      C[e] = beta * (ratio * s + c);
    }
}
KF_KERNEL(gemm, body)
