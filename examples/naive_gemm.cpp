// The smallest correct GEMM for kforge's cpu backend: C = alpha*A*B + beta*C, row-major.
// Each block computes 16 rows of C; launch it with grid ceil_div(M,16):
//   build/kforge eval --problem gemm --lang cpp --source examples/naive_gemm.cpp \
//       --grid 'ceil_div(M,16)' --size M=300,N=200,K=77 --bench
// The arguments follow the problem's ABI: tensors, then sizes as int, then scalars as float.
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      // With beta == 0, C holds garbage (kforge poisons it with NaN): never read it then.
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
