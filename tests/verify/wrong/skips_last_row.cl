// WRONG on purpose: partial write. An off-by-one in the bounds check (i >= M - 1 instead of
// i >= M) makes the work-items of the last row of C return without writing it.
// Caught by: `poison` (the last row still holds the NaN poison), or `bound` in a trial with
//   beta != 0 (where it holds the old C).
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/skips_last_row.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64 --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M - 1 || j >= N) return;  // BUG: should be i >= M
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
