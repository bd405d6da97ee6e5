// WRONG on purpose: returns early when alpha == 0, as if C = alpha*A*B + beta*C were then
// nothing to do. It is C = beta*C: with beta != 0 (and beta != 1) every element of C is wrong.
// Right whenever alpha != 0, which is every trial of the random schedule.
// Caught by: `special_scalars` (thorough mode runs alpha = 0 with beta != 0; the element check
//   inside is `bound`). Quick mode (two trials, alpha != 0) passes it.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/early_return_alpha_zero.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --thorough --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  if (alpha == 0.0f) return;  // BUG: C must still be scaled by beta
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
