// The sum of each row of x (batch_size, dim1) into out (batch_size, 1), accumulated in double.
// reduce_dim is the module's constant (1); this kernel handles that case only.
static void body(const kf_ctx& ctx, const float* x, float* out, int batch_size, int dim1, int reduce_dim) {
  (void)ctx;
  (void)reduce_dim;
  for (int b = 0; b < batch_size; ++b) {
    double s = 0;
    for (int j = 0; j < dim1; ++j) s += x[(long long)b * dim1 + j];
    out[b] = (float)s;
  }
}
KF_KERNEL(kb_2_row_sum, body)
