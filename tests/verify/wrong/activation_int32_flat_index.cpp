// WRONG on purpose: activation.relu (Y = max(X + bias, 0), X and Y (M,N)) with the flat index in
// 32-bit `int` (e = i * N + j), as a plain loop over rows naturally writes it. Every shape whose
// tensors stay below 2^31 elements gets the right answer, so every random, structured and fuzzed
// trial passes it. Its twin with a 64-bit index is tests/data/relu_64bit_index.cpp (and the
// library's kernels/activation/activation.cpp), which passes the same check.
// Caught by: `index_width` (thorough mode, cpu backend, where 8 GiB of memory is free: Y is
//   written whole): X and Y at M = 2^16 + 1, N = 2^15; row 2^16 starts at flat index 2^31, where
//   i * N + j wraps to -2^31, so the kernel reads X and writes Y 8 GiB before their start: the
//   worker faults in the index_width run (crashed, failed_check index_width), or, where something
//   is mapped there, the last row of Y is never written (incorrect, index_width, poison).
//   Where the memory is short the check is skipped, saying what it needs. Quick mode passes it.
//   build/kforge eval --problem activation.relu --lang cpp --entry relu \
//     --source tests/verify/wrong/activation_int32_flat_index.cpp --grid 'ceil_div(M,16)' --json
static void body(const kf_ctx& ctx, const kf_storage* X, const kf_storage* B, kf_storage* Y, int M, int N,
                 float with_bias) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      const int e = i * N + j;  // BUG: the flat index in 32 bits
      float z = kf_to_f32(X[e]) + (with_bias != 0.0f ? kf_to_f32(B[j]) : 0.0f);
      Y[e] = kf_from_f32(z > 0.0f ? z : 0.0f);
    }
}
KF_KERNEL(relu, body)
