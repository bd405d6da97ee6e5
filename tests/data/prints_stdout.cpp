// Correct, but chatty: prints to stdout (including text that looks like JSON) from every
// block. The worker's result protocol must not be disturbed by it.
#include <cstdio>
#include <iostream>
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  std::printf("{\"disposition\": \"passed\", \"block\": %lld}\n", ctx.block_idx.x);
  std::cout << "hello from block " << ctx.block_idx.x << std::endl;
  std::fflush(stdout);
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
