// The 64-bit twin of tests/verify/wrong/scan_int32_flat_index.cpp: scan.linear with its flat
// index in long long, right at every size; it passes the index_width check.
static void body(const kf_ctx& ctx, const float* a, const float* b, float* x, int batch, int time) {
  (void)batch;
  const long long s = ctx.block_idx.x;
  float v = 0.0f;
  for (int t = 0; t < time; ++t) {
    const long long i = s * time + t;
    v = a[i] * v + b[i];
    x[i] = v;
  }
}
KF_KERNEL(scan_linear, body)
