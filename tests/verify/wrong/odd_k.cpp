// WRONG on purpose: wrong only at odd K. The reduction is unrolled by two and the remainder
// iteration is forgotten, so when K is odd the last product A[i,K-1]*B[K-1,j] is dropped.
// Near miss: exact at every even K (the requested 64x64x64 passes a fixed-shape check).
// Caught by: `shapes` (element check `bound`) at a fuzzed shape (1, primes, tile±1 make K odd).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/odd_k.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      const float* a = A + (long long)i * K;
      float s0 = 0.0f, s1 = 0.0f;
      for (int k = 0; k + 1 < K; k += 2) {  // BUG: no remainder loop for odd K
        s0 += a[k] * B[(long long)k * N + j];
        s1 += a[k + 1] * B[(long long)(k + 1) * N + j];
      }
      const float s = s0 + s1;
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
