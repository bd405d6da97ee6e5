// WRONG on purpose: reduce.sum_axis1 (the sum of each row of X (M,N)) with the row's start in
// 32-bit `int` (i * N), as a plain loop nest naturally writes it. Every shape whose X stays below
// 2^31 elements gets the right answer, so every random, structured and fuzzed trial passes it.
// Its twin with 64-bit indices is the library's kernels/reduce/reduce.cpp (`kforge verify
// reduce.sum_axis1 --index-width` passes the same check).
// Caught by: `index_width` (thorough mode, cpu backend): X at M = 2^16 + 1, N = 2^15, mapped on
//   the zero page but for its last two rows; row 2^16 starts at flat index 2^31, where i * N
//   wraps to -2^31, so the kernel reads 8 GiB before X: the worker faults in the index_width run
//   (crashed, failed_check index_width), or, where something is mapped there, sums the wrong
//   row (incorrect, index_width). Quick mode passes it.
//   build/kforge eval --problem reduce.sum_axis1 --lang cpp --entry sum_axis1 \
//     --source tests/verify/wrong/reduce_int32_row_index.cpp --grid 'ceil_div(M,16)' --json
static void body(const kf_ctx& ctx, const kf_storage* X, kf_storage* Y, int M, int N) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i) {
    const kf_storage* row = X + i * N;  // BUG: i * N in 32 bits
    float s = 0.0f;
    for (int j = 0; j < N; ++j) s += kf_to_f32(row[j]);
    Y[i] = kf_from_f32(s);
  }
}
KF_KERNEL(sum_axis1, body)
