// WRONG on purpose: the scalars lose precision. Run with --dtype fp32, but the epilogue keeps
// alpha and beta in bf16 (8 significant bits), as a kernel whose epilogue takes its scalars in
// a 16-bit "compute type" would: alpha = 0.3 becomes 0.30078125, a relative error of 2.6e-3 in
// every element of C, hundreds of times fp32's bound.
// Near miss: exact whenever alpha and beta are representable in bf16 (1, 0.5, 1.25, -0.75, ...),
//   so a check that only ever uses such "nice" scalars cannot see it.
// Caught by: `bound`, provided the trials' scalars are not all representable in bf16.
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/bf16_scalars.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64 --json
inline float round_bf16(float f) {  // round to nearest even, to 8 significant bits
  const uint x = as_uint(f);
  return as_float((x + 0x7fffu + ((x >> 16) & 1u)) & 0xffff0000u);
}

__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
  const float a = round_bf16(alpha), b = round_bf16(beta);  // BUG: scalars in bf16
  const int e = i * N + j;
  C[e] = beta != 0.0f ? a * s + b * C[e] : a * s;
}
