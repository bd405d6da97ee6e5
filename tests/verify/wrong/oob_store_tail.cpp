// WRONG on purpose: writes out of bounds just past the end of C. The loads of a partial last
// tile are guarded (rows past M read as zero, GPU-style), but the stores are not: the last
// block writes its whole TM-row tile, so up to TM-1 rows land past the end of C.
// Near miss: every element of C is right, at every shape; at M a multiple of TM (the requested
//   64x64x64) nothing is written out of bounds at all.
// Caught by: `shapes` (element check `guard`) at a fuzzed shape (the bytes after C are a guard band).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/oob_store_tail.cpp \
//     --params TM=8 --grid 'ceil_div(M,TM)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * TM;
  for (int i = i0; i < i0 + TM; ++i)  // BUG: the store side is not clamped to M
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) {
        const float a = i < M ? A[(long long)i * K + k] : 0.0f;  // guarded load
        s += a * B[(long long)k * N + j];
      }
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;  // unguarded store
    }
}
KF_KERNEL(gemm, body)
