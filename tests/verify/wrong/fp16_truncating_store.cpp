// WRONG on purpose: rounds its fp16 results toward zero. With --dtype fp16 it accumulates in
// fp32, as it should, but converts the result to fp16 by dropping the low 13 bits of the fp32
// value (truncation) instead of rounding to nearest: up to one unit in the last place of error
// where correct rounding allows half of one, and biased toward zero.
// Near miss: the error is below 2^-10 relative, which passes any fixed fp16 tolerance (1e-2,
//   1e-3); only a bound built from fp16's unit roundoff and the reduction length rejects it.
// Caught by: `bound`.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/fp16_truncating_store.cpp \
//     --dtype fp16 --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
#if !defined(KF_DTYPE_FP16)
#error "fp16_truncating_store.cpp is written for --dtype fp16"
#endif
typedef unsigned short T;  // fp16 storage
static inline float to_f32(T h) { return (float)__builtin_bit_cast(_Float16, h); }
static inline T from_f32_truncate(float f) {  // BUG: toward zero, not to nearest
  const unsigned x = __builtin_bit_cast(unsigned, f) & ~0x1fffu;  // exact in fp16 (normal range)
  return __builtin_bit_cast(unsigned short, (_Float16)__builtin_bit_cast(float, x));
}

static void body(const kf_ctx& ctx, const T* A, const T* B, T* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += to_f32(A[(long long)i * K + k]) * to_f32(B[(long long)k * N + j]);
      const long long e = (long long)i * N + j;
      C[e] = from_f32_truncate(beta != 0.0f ? alpha * s + beta * to_f32(C[e]) : alpha * s);
    }
}
KF_KERNEL(gemm, body)
