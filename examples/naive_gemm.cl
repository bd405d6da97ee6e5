// The smallest correct GEMM for kforge's opencl backend: one work-item per element of C.
//   build/kforge eval --problem gemm --lang opencl --source examples/naive_gemm.cl \
//       --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=300,N=200,K=77
// grid counts work-groups per dimension, block the work-items in one.
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;  // the grid is rounded up to whole work-groups
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
