// WRONG on purpose: leaves the floating-point environment changed. The kernel switches on
// flush-to-zero and denormals-are-zero (MXCSR.FZ and .DAZ, "for speed with subnormals") at the
// start of every block and never restores them. Its own arithmetic is an ordinary GEMM and
// passes every bound; what is wrong is what it leaves behind: the worker thread now flushes
// every subnormal to zero, in kforge's reference, in the next kernel, in the caller's code.
// Caught by: `fp_environment` (the cpu backend reads the control state before and after every
//   block and puts it back), at the first run, in quick mode too; no subnormal input is needed.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/ftz_daz_left_on.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
#include <xmmintrin.h>

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  _mm_setcsr(_mm_getcsr() | 0x8040);  // BUG: FZ | DAZ on, and never put back
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      float* c = C + (long long)i * N + j;
      *c = alpha * s + (beta != 0.0f ? beta * *c : 0.0f);
    }
}
KF_KERNEL(gemm, body)
