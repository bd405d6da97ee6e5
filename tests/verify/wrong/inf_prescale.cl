// WRONG on purpose: produces Inf/NaN for some elements. To keep sums of tiny products out of
// the subnormal range, each product is scaled by 2^90 before it is accumulated and the sum is
// scaled back at the end. With ordinary inputs (|a*b| < 2^38) nothing overflows and the result
// is exact to fp32 rounding; with wide-magnitude inputs a product beyond 2^38 overflows to Inf,
// and an element whose sum meets +Inf and -Inf becomes NaN, where the true result is finite.
// Near miss: right for normal, uniform, sparse and small-integer inputs at every shape.
// Caught by: `finite` with the wide-magnitude inputs (2^-20..2^20).
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/inf_prescale.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64 --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; ++k) s += (A[i * K + k] * 0x1p90f) * B[k * N + j];  // BUG: overflows
  s *= 0x1p-90f;
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
