// WRONG on purpose: transposed operand. B is read as if stored column-major (B[j*K + k], i.e.
// the kernel computes A*B^T of a row-major B), a layout slip that stays inside B at every
// shape and gives a finite, plausible-looking C.
// Caught by: `bound` (or `perturbation`).
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/transposed_b.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64 --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += A[i * K + k] * B[j * K + k];  // BUG: B[k * N + j]
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
