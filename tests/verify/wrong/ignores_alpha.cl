// WRONG on purpose: uses alpha as 1. Writes C = A*B + beta*C, which is right only when
// alpha == 1 (the value a check that only tries the default scalars uses).
// Caught by: `bound` (kforge's trials use alpha = 1.25 and -0.75).
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/ignores_alpha.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64 --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  (void)alpha;
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
  const int e = i * N + j;
  C[e] = beta != 0.0f ? s + beta * C[e] : s;  // BUG: alpha * s
}
