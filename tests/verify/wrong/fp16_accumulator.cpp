// WRONG on purpose: accumulates in fp16. With --dtype fp16 the storage is half precision, and
// this kernel also keeps its running sum in half precision (rounded to fp16 after every
// multiply-add) instead of fp32: each step loses up to 2^-11 of the partial sum, so the error
// grows like K * 2^-11, and a partial sum beyond 65504 overflows to Inf.
// Near miss: at K = 1 or 2 it is as good as an fp32 accumulator.
// Caught by: `bound` (the error bound assumes fp32 accumulation), or `finite` where a partial
//   sum overflowed (wide-magnitude inputs).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/fp16_accumulator.cpp \
//     --dtype fp16 --grid 'ceil_div(M,16)' --size M=64,N=64,K=256 --json
#if !defined(KF_DTYPE_FP16)
#error "fp16_accumulator.cpp is written for --dtype fp16"
#endif
typedef unsigned short T;  // fp16 storage
static inline float to_f32(T h) { return (float)__builtin_bit_cast(_Float16, h); }
static inline T from_f32(float f) { return __builtin_bit_cast(unsigned short, (_Float16)f); }
static inline float round_f16(float f) { return to_f32(from_f32(f)); }

static void body(const kf_ctx& ctx, const T* A, const T* B, T* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k)  // BUG: the accumulator is rounded to fp16 every step
        s = round_f16(s + to_f32(A[(long long)i * K + k]) * to_f32(B[(long long)k * N + j]));
      const long long e = (long long)i * N + j;
      C[e] = from_f32(beta != 0.0f ? alpha * s + beta * to_f32(C[e]) : alpha * s);
    }
}
KF_KERNEL(gemm, body)
