// CRASHES on purpose: calls abort().
#include <cstdlib>
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  if (M > 0) std::abort();
}
KF_KERNEL(gemm, body)
