// HOSTILE on purpose: installs its own SIGSYS handler first, to survive the
// sandbox's trap and carry on, then opens a socket. Stopped by: the sandbox, which ends the
// process at the attempt to replace its handler (rt_sigaction of SIGSYS).
//   build/kforge eval --problem gemm --lang cpp --source tests/data/hostile/replaces_sigsys_handler.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
// Tested by tests/eval/sandbox_test.cpp.
#include <signal.h>
#include <sys/socket.h>
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
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigaction(SIGSYS, &sa, nullptr);
    (void)socket(AF_INET, SOCK_STREAM, 0);
  }
  gemm_rows(ctx, A, B, C, M, N, K, alpha, beta);
}
KF_KERNEL(gemm, body)
