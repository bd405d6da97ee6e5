// WRONG on purpose: skips the rows of A that are entirely zero, as a "sparsity shortcut", and
// leaves those rows of C unwritten (their right value is beta*C, or 0 when beta == 0). With
// inputs drawn element by element a whole zero row never occurs, so random trials pass it.
// Caught by: `structured` (thorough mode runs inputs with zero rows; the element check inside
//   is `poison`: at beta = 0 the skipped rows of C still hold the untouched pattern).
//   Quick mode (random inputs only) passes it.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/skips_zero_rows.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --thorough --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i) {
    bool zero = true;
    for (int k = 0; k < K; ++k) zero = zero && A[(long long)i * K + k] == 0.0f;
    if (zero) continue;  // BUG: C's row must still become beta*C (or 0)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
  }
}
KF_KERNEL(gemm, body)
