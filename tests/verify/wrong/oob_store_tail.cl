// WRONG on purpose: writes out of bounds past the end of C. Each work-group covers 16 columns
// by TM rows; the bounds check tests only the column (j >= N). Rows past M load zeros from A
// (guarded loads) but still store, so the last work-group writes up to TM-1 rows past C's end.
// Near miss: every element of C is right at every shape; at M a multiple of TM (the requested
//   64x64x64) nothing is written out of bounds.
// Caught by: `shapes` (element check `guard`) at a fuzzed shape.
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/oob_store_tail.cl \
//     --params TM=4 --grid 'ceil_div(N,16),ceil_div(M,TM)' --block '16,TM' \
//     --size M=64,N=64,K=64 --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (j >= N) return;  // BUG: i >= M is not checked
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += (i < M ? A[i * K + k] : 0.0f) * B[k * N + j];
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
