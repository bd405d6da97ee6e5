// Lazy-reduction gradients for the cuda backend (the defines: lazy_grad.cpp's header; the
// mathematics: grad_problem.cpp). As the opencl kernel: one thread per output row p walks every
// point q of the other set, reading it from global memory (neighbouring threads read the same q
// at once: one broadcast), the chain into up to LZ_DC coordinate sums in registers, a row of
// D > LZ_DC walking the set once per LZ_DC coordinates. Not yet staged in shared memory as the
// sum's kernel is: compiled for sm_90 here, untimed (no GPU on the build host).
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)
#ifndef LZ_WRT
#define LZ_WRT 0
#define LZ_RED 0
#define LZ_NTERMS 1
#define LZ_TERM0 0
#define LZ_TERM1 0
#define LZ_F(t0, t1) (expf((-(t0)) / s))
#define LZ_G0(t0, t1) ((-expf((-(t0)) / s)) / s)
#define LZ_G1(t0, t1) (0.0f)
#define LZ_SCALAR_PARAMS , float s
#endif
#define LZ_DC 8

// The weights (grad_problem.cpp's table): the row's, applied last, and the summed point's.
// logsumexp (LZ_RED 1): G weighs X's points; B is the forward's LSE (N), and each pair is also
// weighted by its softmax exp(f - LSE of its x), shifted before exp, the exponent clamped at 0.
#if LZ_RED == 1
#define LZ_ROW_W(i) (LZ_WRT == 0 ? G[i] : 1.0f)
#define LZ_COL_W(j) (LZ_WRT == 0 ? 1.0f : G[j])
#else
#define LZ_ROW_W(i) (LZ_WRT == 0 ? G[i] : LZ_WRT == 1 ? B[i] : 1.0f)
#define LZ_COL_W(j) (LZ_WRT == 0 ? B[j] : G[j])
#endif

typedef kf_storage T;  // fp32

__device__ __forceinline__ float lz_term(int kind, const T* p, const T* q, int D) {
  float t = 0.0f;
  for (int d = 0; d < D; ++d) t += kind == 0 ? (p[d] - q[d]) * (p[d] - q[d]) : p[d] * q[d];
  return t;
}
// The term's gradient in p times w.
__device__ __forceinline__ float lz_chain(int kind, float w, float pv, float qv) {
  return kind == 0 ? w * (2.0f * (pv - qv)) : w * qv;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    lazy_grad(const T* __restrict__ X, const T* __restrict__ Y, const T* __restrict__ B, const T* __restrict__ G,
              T* OUT, int N, int M, int D LZ_SCALAR_PARAMS) {
  const T* P = LZ_WRT == 0 ? X : Y;
  const T* Q = LZ_WRT == 0 ? Y : X;
  const int rows = LZ_WRT == 0 ? N : M, inner = LZ_WRT == 0 ? M : N;
  const int r = blockIdx.x * THREADS + threadIdx.x;
  if (r >= rows) return;
  const T* p = P + (long long)r * D;
#if LZ_WRT == 2
  float acc = 0.0f;
  for (int j = 0; j < inner; ++j) {
    const T* q = Q + (long long)j * D;
    const float t0 = lz_term(LZ_TERM0, p, q, D);
    const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, p, q, D) : 0.0f;
    acc += LZ_F(t0, t1) * LZ_COL_W(j);
  }
  OUT[r] = acc;
#else
  for (int d0 = 0; d0 < D; d0 += LZ_DC) {
    const int nd = min(LZ_DC, D - d0);
    float acc[LZ_DC];
#pragma unroll
    for (int d = 0; d < LZ_DC; ++d) acc[d] = 0.0f;
    for (int j = 0; j < inner; ++j) {
      const T* q = Q + (long long)j * D;
      const float t0 = lz_term(LZ_TERM0, p, q, D);
      const float t1 = LZ_NTERMS > 1 ? lz_term(LZ_TERM1, p, q, D) : 0.0f;
      float w = LZ_COL_W(j);
#if LZ_RED == 1
      w *= expf(fminf(LZ_F(t0, t1) - B[LZ_WRT == 0 ? r : j], 0.0f));  // clamped at 0: lazy_grad.cpp's lz_softmax
#endif
      const float w0 = LZ_G0(t0, t1) * w;
      const float w1 = LZ_NTERMS > 1 ? LZ_G1(t0, t1) * w : 0.0f;
#pragma unroll
      for (int d = 0; d < LZ_DC; ++d)
        if (d < nd) {
          acc[d] += lz_chain(LZ_TERM0, w0, p[d0 + d], q[d0 + d]);
          if (LZ_NTERMS > 1) acc[d] += lz_chain(LZ_TERM1, w1, p[d0 + d], q[d0 + d]);
        }
    }
    const float wr = LZ_ROW_W(r);
    for (int d = 0; d < nd; ++d) OUT[(long long)r * D + d0 + d] = wr * acc[d];
  }
#endif
}
