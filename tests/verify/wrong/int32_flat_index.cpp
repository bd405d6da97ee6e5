// WRONG on purpose: computes flat indices in 32-bit `int` (i * K + k), as a plain loop nest
// naturally does. Every shape whose tensors stay below 2^31 elements gets the right answer, so
// every random, structured and fuzzed trial passes it. Its twin with 64-bit indices
// ((long long)i * K + k) is examples/naive_gemm.cpp, which passes the same check.
// Caught by: `index_width` (thorough mode, cpu backend): gemm at M = 2^16 + 1, K = 2^15, N = 1,
//   A mapped on the zero page but for its last two rows; row 2^16 starts at flat index 2^31, where
//   i * K wraps to -2^31, so the kernel reads 8 GiB before A: the worker faults in the
//   index_width run (disposition crashed, failed_check index_width), or, where something is
//   mapped there, reads the wrong values (incorrect, index_width). Quick mode passes it.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/int32_flat_index.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];  // BUG: i * K in 32 bits
      const int e = i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
