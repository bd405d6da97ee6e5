// WRONG on purpose: the tail is lost only after a full tile. Blocks own 48 rows (hard-coded,
// not a declared parameter, so the verifier has no tile hint); a partial last block is skipped
// when it is not also the first, i.e. whenever M > 48 and M is not a multiple of 48. A matrix
// smaller than one tile (M < 48) and any multiple of 48 (the requested 96x96x96) are right.
// Caught by: `shapes` (element check `poison`, or `bound` with beta != 0) at a fuzzed shape
//   with M > 48, M % 48 != 0:
//   the requested size ± 1 (95, 97) or a prime such as 61, 67, 97, 127.
// Run with --seed 5: that seed's fuzzed shapes (M = 1, 3, 31, 13, 13, 1, 7, 13) are all below one
//   tile, so the bug is only found if the fuzzer always tries one off the requested sizes
//   (today it draws every dimension at random from its pool, and this seed passes the kernel).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/tail_after_full_tile.cpp \
//     --grid 'ceil_div(M,48)' --size M=96,N=96,K=96 --seed 5 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 48;
  if (i0 > 0 && i0 + 48 > M) return;  // BUG: a partial last block after full ones is skipped
  const int i1 = i0 + 48 < M ? i0 + 48 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
