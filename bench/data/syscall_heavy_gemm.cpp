// A correct GEMM that also makes 20,000 cheap system calls (getppid) per launch: the worst case
// for the sandbox's filter, which runs on every system call (bench/sandbox_overhead.py).
#include <unistd.h>
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  if (ctx.block_idx.x == 0)
    for (int c = 0; c < 20000; ++c) (void)getppid();
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16, i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
