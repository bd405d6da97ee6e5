// WRONG on purpose: low-precision accumulation where fp32 is claimed. Run with --dtype fp32,
// but the running sum is rounded to bf16 (8 significant bits) after every multiply-add, as a
// kernel that "keeps its accumulator in bf16 registers to halve register pressure" would.
// The error grows like K * 2^-9 of the sum's magnitude, far beyond fp32 rounding.
// Caught by: `bound` (fp32's bound: K * 2^-24 of the magnitude).
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/bf16_accumulator.cl \
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
  for (int k = 0; k < K; ++k) s = round_bf16(s + A[i * K + k] * B[k * N + j]);  // BUG
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
