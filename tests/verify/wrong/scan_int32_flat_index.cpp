// WRONG on purpose: scan.linear (x[t] = a[t] x[t-1] + b[t], a, b, x (batch,time)) with the flat
// index in 32-bit `int` (i = s * time + t), as a plain loop over sequences naturally writes it.
// Every shape whose tensors stay below 2^31 elements gets the right answer, so every random,
// structured and fuzzed trial passes it; the library's kernels/scan/scan.cpp forms its offsets
// in 64 bits and passes the same check.
// Caught by: `index_width` (thorough mode, cpu backend): a, b and x at batch = 2^16 + 1,
//   time = 2^15; sequence 2^16 starts at flat index 2^31, where s * time wraps to -2^31, so the
//   kernel reads and writes 8 GiB before the tensors' start: the worker faults in the
//   index_width run (crashed, failed_check index_width), or, where something is mapped there, the
//   last sequence of x is never written (incorrect, index_width, poison). Where 10 GiB is not
//   free (or KFORGE_INDEX_WIDTH_PROXY=1) the proxy makes the same run with x's earlier rows
//   folded onto 16 MiB. Quick mode passes it.
//   build/kforge eval --problem scan.linear --lang cpp --entry scan_linear --grid batch \
//     --source tests/verify/wrong/scan_int32_flat_index.cpp --size batch=5,time=64 --json
static void body(const kf_ctx& ctx, const float* a, const float* b, float* x, int batch, int time) {
  (void)batch;
  const int s = (int)ctx.block_idx.x;
  float v = 0.0f;
  for (int t = 0; t < time; ++t) {
    const int i = s * time + t;  // BUG: the flat index in 32 bits
    v = a[i] * v + b[i];
    x[i] = v;
  }
}
KF_KERNEL(scan_linear, body)
