// WRONG on purpose: a "sparsity shortcut" for the rows of A that are entirely zero that writes
// those rows of C as 0, the product of a zero row, forgetting beta*C. At beta = 0 that is right;
// at beta != 0 the row must be beta*C. Drawn inputs never hold a zero row, the special scalar
// sets run on drawn inputs, and trial 0's structured inputs come with beta = 0, so everything
// but a zero row at beta != 0 passes it.
// Caught by: `structured` under trial 1's scalars (zero_rows at beta = 0.5 + 2^-15; the element
//   check inside is `bound`). With the structured runs on trial 0's scalars only, only a fuzzed
//   thin shape found it (K = 3 with the sparse distribution's 60% zeros: zero rows by chance).
//   Quick mode (random inputs only) passes it.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/zero_row_writes_zero.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --thorough --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i) {
    bool zero = true;
    for (int k = 0; k < K; ++k) zero = zero && A[(long long)i * K + k] == 0.0f;
    for (int j = 0; j < N; ++j) {
      const long long e = (long long)i * N + j;
      if (zero) {  // BUG: the row must become beta*C, not 0
        C[e] = 0.0f;
        continue;
      }
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
  }
}
KF_KERNEL(gemm, body)
