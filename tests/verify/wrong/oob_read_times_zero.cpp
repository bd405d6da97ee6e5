// WRONG on purpose: reads past the end of its inputs. The K loop is unrolled by two and the
// tail of an odd K is handled by weighting the second lane of the last pair with zero, instead
// of not loading it: A[i*K + K] (the next row's first element, past A's end in the last row)
// and B[K*N + j] (past B's end) are read and multiplied by 0. With finite bytes past the end,
// 0 * x = 0 and every element of C is right, so a check of the values alone passes it.
// Caught by: `oob_read` (the guard bands hold a signalling NaN: 0 * NaN = NaN, and the NaN in
//   C carries the guard's payload), at the requested odd K, in quick and thorough mode.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/oob_read_times_zero.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=63 --json
static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; k += 2) {
        const float w = k + 1 < K ? 1.0f : 0.0f;  // BUG: weights the lane out but still loads it
        s += A[(long long)i * K + k] * B[(long long)k * N + j] +
             w * (A[(long long)i * K + k + 1] * B[(long long)(k + 1) * N + j]);
      }
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
