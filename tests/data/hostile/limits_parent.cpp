// HOSTILE on purpose: changes the limits of the process that started the worker (kforge
// itself): a file-descriptor limit of 3, so that kforge can open nothing more. Stopped by: the
// sandbox (prlimit64 of another process).
//   build/kforge eval --problem gemm --lang cpp --source tests/data/hostile/limits_parent.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
// Tested by tests/eval/sandbox_test.cpp.
#include <sys/resource.h>
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
    const rlimit few{3, 3};
    (void)prlimit(getppid(), RLIMIT_NOFILE, &few, nullptr);
  }
  gemm_rows(ctx, A, B, C, M, N, K, alpha, beta);
}
KF_KERNEL(gemm, body)
