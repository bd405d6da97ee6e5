// HANGS on purpose: an endless loop with a visible side effect, so it is not optimized away.
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  volatile long long spins = 0;
  while (M > 0) spins = spins + 1;
}
KF_KERNEL(gemm, body)
