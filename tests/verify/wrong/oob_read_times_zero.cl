// WRONG on purpose: reads past the end of its inputs. The K loop is unrolled by two and the
// tail of an odd K is handled by weighting the second lane of the last pair with zero, instead
// of not loading it: A[i*K + K] (past A's end in the last row) and B[K*N + j] (past B's end)
// are read and multiplied by 0. With finite bytes past the end every element of C is right.
// Caught by: `oob_read` (the guard bands hold a signalling NaN: 0 * NaN = NaN, and the NaN in
//   C carries the guard's payload), at the requested odd K, in quick and thorough mode.
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/oob_read_times_zero.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=63 --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; k += 2) {
    const float w = k + 1 < K ? 1.0f : 0.0f;  // BUG: weights the lane out but still loads it
    s += A[i * K + k] * B[k * N + j] + w * (A[i * K + k + 1] * B[(k + 1) * N + j]);
  }
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
