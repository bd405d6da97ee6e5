// WRONG on purpose: writes into its input A. To save a multiply per product it scales its
// rows of A by alpha in place and then computes C = (alpha*A)*B + beta*C. C is right (to
// rounding) on the first call, but the caller's A is destroyed: a second GEMM on the same A
// (or the caller's own use of A) is wrong.
// Caught by: `inputs_intact` (input tensors are read back and compared byte for byte).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/writes_input_a.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int k = 0; k < K; ++k) A[(long long)i * K + k] *= alpha;  // BUG: A is an input
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? s + beta * C[e] : s;
    }
}
KF_KERNEL(gemm, body)
