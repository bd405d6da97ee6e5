// HOSTILE on purpose: raises its own address-space limit (to unlimited, which root may do, else
// its soft limit to the hard one) and then touches 3 GiB, 256 MiB at a time; aborts when an
// allocation fails. A correct GEMM for the rest. Under a 1 GiB limit it must be stopped: the
// sandbox refuses the raise (setrlimit fails with EPERM), and where the worker has room above
// its limit for the index_width run (the address space may be set then), the resident-memory
// watchdog kills it at the limit.
//   build/kforge eval --problem gemm --lang cpp --source tests/data/hostile/raises_own_limit.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --memory 1 --json
// Tested by tests/eval/isolation_test.cpp (Isolation.AKernelCannotRaiseItsOwnLimits...).
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

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
    rlimit as{};
    getrlimit(RLIMIT_AS, &as);
    const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &unlimited) != 0) {
      as.rlim_cur = as.rlim_max;
      (void)setrlimit(RLIMIT_AS, &as);
    }
    const unsigned long long piece = 256ull << 20;
    char* pieces[12];
    for (int i = 0; i < 12; ++i) {
      pieces[i] = static_cast<char*>(std::malloc(piece));
      if (!pieces[i]) std::abort();
      std::memset(pieces[i], i + 1, piece);
    }
    for (int i = 0; i < 12; ++i) std::free(pieces[i]);
  }
  gemm_rows(ctx, A, B, C, M, N, K, alpha, beta);
}
KF_KERNEL(gemm, body)
