// WRONG on purpose: scales each row of A by its largest magnitude before the dot products (a
// "range guard" against overflow) and multiplies the result back: s = m * sum((a/m) * b). A
// row of zeros gives m = 0 and 0/0 = NaN in every element of that row of C. Random inputs
// never hold a zero row, so random trials pass it.
// Caught by: `structured` (thorough mode runs inputs with zero rows; the element check inside
//   is `finite`). Quick mode (random inputs only) passes it.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/divides_by_row_max.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --thorough --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i) {
    float m = 0.0f;
    for (int k = 0; k < K; ++k) {
      const float a = A[(long long)i * K + k];
      m = m > (a < 0 ? -a : a) ? m : (a < 0 ? -a : a);
    }
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += (A[(long long)i * K + k] / m) * B[(long long)k * N + j];  // BUG: m may be 0
      s *= m;
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
  }
}
KF_KERNEL(gemm, body)
