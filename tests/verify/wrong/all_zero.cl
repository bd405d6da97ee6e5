// WRONG on purpose: all-zero output. The epilogue was moved above the reduction loop, so C is
// written from the accumulator's initial value: 0 when beta == 0 (beta*C otherwise), and the
// loop is dead code. A check against a zero-initialised C, or with inputs that make the
// reference ~0, passes it.
// Caught by: `all_zero` in a trial with beta == 0 (`bound` in one with beta != 0).
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/all_zero.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64 --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  float s = 0.0f;
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;  // BUG: before the loop
  for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
}
