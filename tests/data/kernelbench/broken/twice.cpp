// out = 2 x for the broken problem files (x, out, n): a kernel that is right, so that only the
// problem can be at fault.
static void body(const kf_ctx& ctx, const float* x, float* out, int n) {
  (void)ctx;
  for (int i = 0; i < n; ++i) out[i] = 2.0f * x[i];
}
KF_KERNEL(twice, body)
