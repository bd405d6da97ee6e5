// DOES NOT COMPILE on purpose: an undeclared identifier and a missing semicolon.
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C, int M, int N, int K,
                 float alpha, float beta) {
  C[0] = undeclared_thing_kf * alpha
}
KF_KERNEL(gemm, body)
