// WRONG on purpose: reads C when beta == 0. The epilogue is C = alpha*s + beta*C
// unconditionally. The BLAS rule (and kforge's ABI) says C is not read when beta == 0: it may
// hold NaN (kforge poisons it), and 0*NaN = NaN. Right for every beta != 0, and right for
// beta == 0 whenever the caller happened to zero C first (what a naive check does).
// Caught by: `poison_read` in a trial with beta == 0: C starts as a signalling NaN whose payload
//   means "untouched"; 0*NaN returns it quieted with the payload kept, so the output says
//   "C was read although beta = 0".
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/reads_c_beta_zero.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = alpha * s + beta * C[e];  // BUG: reads C even when beta == 0
    }
}
KF_KERNEL(gemm, body)
