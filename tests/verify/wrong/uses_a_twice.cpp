// WRONG on purpose: ignores one input. A copy-paste slip reads the second operand from A
// (with B's indexing) instead of B, so B never influences C. Nothing crashes (at a square
// shape the index stays inside A; here it is wrapped into A at any shape, so the test is about
// the wrong operand, not a stray read) and the output is a plausible-looking matrix.
// Caught by: `bound` (or `perturbation`: changing an element of B leaves C unchanged).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/uses_a_twice.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  (void)B;
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  const long long a_elems = (long long)M * K;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) {
        const long long kb = ((long long)k * N + j) % a_elems;  // (kept inside A at any shape)
        s += A[(long long)i * K + k] * A[kb];  // BUG: A where B belongs
      }
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
