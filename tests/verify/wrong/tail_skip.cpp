// WRONG on purpose: tail skipped. Each block owns a TM x TN tile of C and returns early when
// the tile sticks out of the matrix ("the grid is rounded up, so a partial tile is padding"),
// so whenever M or N is not a multiple of the tile its last rows/columns are never written.
// Near miss: correct at any M, N that are multiples of the tile (e.g. the requested 64x64x64).
// Caught by: `shapes` (tile±1, primes, 1), where the unwritten elements still hold the
//   poison (element check `poison`) or, in a trial with beta != 0, the old C (`bound`).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/tail_skip.cpp \
//     --params TM=16,TN=16 --grid 'ceil_div(N,TN),ceil_div(M,TM)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int j0 = static_cast<int>(ctx.block_idx.x) * TN;
  const int i0 = static_cast<int>(ctx.block_idx.y) * TM;
  if (i0 + TM > M || j0 + TN > N) return;  // BUG: a partial tile is not padding, it is the tail
  for (int i = i0; i < i0 + TM; ++i)
    for (int j = j0; j < j0 + TN; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
