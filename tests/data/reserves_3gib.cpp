// A correct gemm that first reserves 3 GiB of address space (never touched) and aborts when it
// cannot: under a 1 GiB limit every run but the index_width one must see that limit.
#include <cstdlib>
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  void* reserve = std::malloc(3ull << 30);
  if (!reserve) std::abort();
  std::free(reserve);
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
