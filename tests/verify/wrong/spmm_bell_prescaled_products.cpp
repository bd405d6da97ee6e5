// WRONG on purpose: a blocked-ELL spmm that scales every tile by 2^16 before the products (a
// guard against tiny products falling into the subnormal range) and scales the sum back at the
// store: C = 2^-16 * sum((2^16 a) b). The exact result is finite, but where the products are
// large the scaled partial sums overflow to Inf (and Inf * 2^-16 stays Inf). Random inputs
// (|a|, |b| < 6, at most K = a few hundred terms) stay 30 binades below the overflow, so random
// trials pass it.
// Caught by: `structured` (the near_overflow pattern scales B so that a row's exact sum nears a
//   quarter of fp32's largest value; the element check inside is `finite`). Quick mode (random
//   inputs only) passes it.
//   build/kforge eval --problem spmm_bell --lang cpp --grid 'ceil_div(M,BS)' \
//     --source tests/verify/wrong/spmm_bell_prescaled_products.cpp \
//     --size M=61,K=53,N=19,NNZ=700,BS=4,EC=14 --thorough --json
// Otherwise right: one block per block row, every slot's tile up to the first padding slot,
// each row's columns accumulated in float.
static void body(const kf_ctx& ctx, const int* block_col, const float* values, const float* B, float* C, int M,
                 int K, int N, int NNZ, int BS, int EC, float pattern) {
  (void)NNZ, (void)pattern;
  const float up = 65536.0f, down = 1.0f / 65536.0f;
  const int br = (int)ctx.block_idx.x, r0 = br * BS;
  for (int i = 0; i < BS && r0 + i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int s = 0; s < EC; ++s) {
        const int bc = (int)block_col[(long long)br * EC + s];
        if (bc < 0) break;
        const float* a = values + ((long long)br * EC + s) * BS * BS + (long long)i * BS;
        for (int k = 0; k < BS && bc * BS + k < K; ++k)
          acc += (up * a[k]) * B[(long long)(bc * BS + k) * N + j];  // BUG: overflows where a * b is large
      }
      C[(long long)(r0 + i) * N + j] = acc * down;
    }
}
KF_KERNEL(spmm_bell, body)
