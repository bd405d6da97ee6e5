// HOSTILE on purpose: a fork bomb, bounded so that it stays harmless where the sandbox is off
// (--no-sandbox): six rounds of fork() in every process, 64 processes that exit at once.
// Stopped by: the sandbox at the first fork (clone without CLONE_THREAD).
//   build/kforge eval --problem gemm --lang cpp --source tests/data/hostile/fork_bomb.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
// Tested by tests/eval/sandbox_test.cpp.
#include <sys/wait.h>
#include <unistd.h>
// An honest GEMM for the rest: the hostile act is all that may stop it.
static void gemm_rows(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                      float alpha, float beta) {
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

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  if (ctx.block_idx.x == 0) {
    bool child = false;
    for (int round = 0; round < 6; ++round) {
      const pid_t p = fork();
      if (p == 0) child = true;
    }
    if (child) _exit(0);
    while (wait(nullptr) > 0) {
    }
  }
  gemm_rows(ctx, A, B, C, M, N, K, alpha, beta);
}
KF_KERNEL(gemm, body)
