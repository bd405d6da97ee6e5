// WRONG on purpose: wrong only at small sizes. A "skinny" fast path for M < 8 (GEMV-like
// calls) was copied from a kernel that takes B pre-transposed, and indexes B as B[j*K + k].
// The general path, which every shape with M >= 8 takes, is right.
// Near miss: exact at the requested 64x64x64 (and at any M >= 8).
// Caught by: `shapes` (element check `bound`) at a fuzzed shape with M < 8 (1, 2, 3, 5, 7 are all fuzzed).
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/small_m_path.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64 --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  float s = 0.0f;
  if (M < 8) {
    for (int k = 0; k < K; ++k) s += A[i * K + k] * B[j * K + k];  // BUG: B[k * N + j]
  } else {
    for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
  }
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
