// WRONG on purpose: reduce.max_axis0 (the max of each column of X (M,N)) with the element's flat
// index in 32-bit `int` (i * N + j, from an index helper). Every shape whose X
// stays below 2^31 elements gets the right answer, so every random, structured and fuzzed trial
// passes it. Its twin with 64-bit indices is the library's kernels/reduce/reduce.cpp (`kforge
// verify reduce.max_axis0 --index-width` passes the same check).
// Caught by: `index_width` (thorough mode, cpu backend): X at M = 2^16 + 1, N = 2^15, mapped on
//   the zero page but for its last two rows; row 2^16 starts at flat index 2^31, where i * N
//   wraps to -2^31, so the kernel reads 8 GiB before X: the worker faults in the index_width run
//   (crashed, failed_check index_width), or, where something is mapped there, takes the max of
//   the wrong rows (incorrect, index_width). The expected Y there is not the live rows' max but
//   the max of one zero row and the live rows (Problem::wide_index_reference). Quick mode passes it.
//   build/kforge eval --problem reduce.max_axis0 --lang cpp --entry max_axis0 \
//     --source tests/verify/wrong/reduce_int32_column_index.cpp --grid 'ceil_div(N,64)' --size M=37,N=1000 --json
// The flat index of (i, j), in int, as an index helper is naturally written. Kept out of line:
// inlined, GCC -O3 turns i * N + j in the loop below into a 64-bit pointer that steps by N (the
// overflow is undefined, so it may), and the compiled kernel has no 32-bit index left to wrap.
__attribute__((noinline)) static int flat(int i, int N, int j) { return i * N + j; }  // BUG: 32 bits

static void body(const kf_ctx& ctx, const kf_storage* X, kf_storage* Y, int M, int N) {
  const int j0 = static_cast<int>(ctx.block_idx.x) * 64;
  const int j1 = j0 + 64 < N ? j0 + 64 : N;
  float best[64];
  for (int j = j0; j < j1; ++j) best[j - j0] = kf_to_f32(X[j]);
  for (int i = 1; i < M; ++i)
    for (int j = j0; j < j1; ++j) {
      const float v = kf_to_f32(X[flat(i, N, j)]);
      if (v > best[j - j0]) best[j - j0] = v;
    }
  for (int j = j0; j < j1; ++j) Y[j] = kf_from_f32(best[j - j0]);
}
KF_KERNEL(max_axis0, body)
