// WRONG on purpose, right only at the default sizes: the row stride is the default dim1 (256)
// written as a constant, so any other dim1 reads the wrong elements.
static void body(const kf_ctx& ctx, const float* x, float* out, int batch_size, int dim1, int reduce_dim) {
  (void)ctx;
  (void)reduce_dim;
  for (int b = 0; b < batch_size; ++b) {
    double s = 0;
    for (int j = 0; j < dim1; ++j) s += x[(long long)b * 256 + j];
    out[b] = (float)s;
  }
}
KF_KERNEL(kb_2_row_sum, body)
