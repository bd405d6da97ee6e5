// conv2d for the opencl backend, the general kernel: direct convolution, NCHW, any sizes.
// A work-group owns KWG filters x QWG output columns of one output row (n, p). The reduction
// over (c, r) input rows runs in slices that fit local memory; per slice the work-group copies
//   Xl: for each (c, r) of the slice, the input row segment its QWG columns read (span =
//       (QWG-1)*stride + (S-1)*dil + 1 values, zero outside the image), each loaded once;
//   Wl: the slice's weights of its KWG filters, [(c, r, s)][KWG];
// then each work-item accumulates KWI = KWG/KDIM filters x QWI = QWG/QDIM columns in registers.
// Work-item (tq, tk) owns columns q0 + tq + j*QDIM and filters k0 + tk + i*KDIM (strided, so
// neighbouring work-items touch neighbouring memory). A window too wide for local memory
// (span > XLM or S > EW: huge dilations) takes a direct path that reads global memory.
//
// Parameters (all #defines):
//   QWG, KWG   the work-group's tile: output columns, filters
//   QDIM, KDIM work-items along the columns (local size x) and the filters (local size y)
//   EW         reduction elements (c, r, s) per slice: Wl holds EW x KWG floats
//   XLM        floats of input staged per slice
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout.
#define QWI (QWG / QDIM)
#define KWI (KWG / KDIM)
#define THREADS (QDIM * KDIM)

#if defined(KF_DTYPE_FP16)
typedef half T;
#define LOAD1(p) vload_half(0, (p))
#define STORE1(v, p) vstore_half_rte((v), 0, (p))
#elif defined(KF_DTYPE_BF16)
typedef ushort T;
#define LOAD1(p) as_float((uint)(*(p)) << 16)
inline ushort f32_to_bf16(float f) {  // round to nearest even; a NaN stays a (quiet) NaN
  const uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
  return (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
#define STORE1(v, p) (*(p) = f32_to_bf16(v))
#else
typedef float T;
#define LOAD1(p) (*(p))
#define STORE1(v, p) (*(p) = (v))
#endif

__kernel __attribute__((reqd_work_group_size(QDIM, KDIM, 1)))
void conv2d(__global const T* x, __global const T* w, __global T* y, int N, int C, int H, int W,
            int K, int R, int S, int stride, int pad, int dil) {
  __local float Xl[XLM];       // (pairs, span)
  __local float Wl[EW * KWG];  // (pairs * S, KWG)
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int tq = get_local_id(0), tk = get_local_id(1), tid = tk * QDIM + tq;
  const int q0 = get_group_id(0) * QWG, k0 = get_group_id(1) * KWG;
  const int n = get_group_id(2) / P, p = get_group_id(2) % P;
  const int span = (QWG - 1) * stride + (S - 1) * dil + 1;
  const int v0 = q0 * stride - pad;  // first input column of the tile
  const int crs = C * R * S;
  __global const T* xn = x + (long)n * C * H * W;

  float acc[KWI][QWI];
  for (int i = 0; i < KWI; ++i)
    for (int j = 0; j < QWI; ++j) acc[i][j] = 0.0f;

  if (span <= XLM && S <= EW) {
    // (c, r) pairs per slice: as many as both local buffers hold.
    const int per = min(XLM / span, EW / S);
    for (int e0 = 0; e0 < C * R; e0 += per) {
      const int np = min(per, C * R - e0);
      for (int t = tid; t < np * span; t += THREADS) {
        const int e = e0 + t / span, col = v0 + t % span;
        const int c = e / R, h = p * stride - pad + (e % R) * dil;
        Xl[t] = h >= 0 && h < H && col >= 0 && col < W ? LOAD1(xn + ((long)c * H + h) * W + col) : 0.0f;
      }
      for (int t = tid; t < np * S * KWG; t += THREADS) {
        const int kk = t / (np * S), e = t % (np * S);  // consecutive items: one filter's weights
        const int k = k0 + kk;
        Wl[e * KWG + kk] = k < K ? LOAD1(w + (long)k * crs + e0 * S + e) : 0.0f;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int e = 0; e < np; ++e)
        for (int s = 0; s < S; ++s) {
          float wv[KWI], xv[QWI];
          for (int i = 0; i < KWI; ++i) wv[i] = Wl[(e * S + s) * KWG + tk + i * KDIM];
          for (int j = 0; j < QWI; ++j) xv[j] = Xl[e * span + (tq + j * QDIM) * stride + s * dil];
          for (int i = 0; i < KWI; ++i)
            for (int j = 0; j < QWI; ++j) acc[i][j] = fma(wv[i], xv[j], acc[i][j]);
        }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  } else {
    for (int i = 0; i < KWI; ++i) {
      const int k = min(k0 + tk + i * KDIM, K - 1);
      for (int e = 0; e < crs; ++e) {
        const int c = e / (R * S), r = e / S % R, s = e % S;
        const int h = p * stride - pad + r * dil;
        if (h < 0 || h >= H) continue;
        const float wv = LOAD1(w + (long)k * crs + e);
        for (int j = 0; j < QWI; ++j) {
          const int col = v0 + (tq + j * QDIM) * stride + s * dil;
          if (col >= 0 && col < W) acc[i][j] = fma(wv, LOAD1(xn + ((long)c * H + h) * W + col), acc[i][j]);
        }
      }
    }
  }

  for (int i = 0; i < KWI; ++i) {
    const int k = k0 + tk + i * KDIM;
    if (k >= K) break;
    __global T* yo = y + (((long)n * K + k) * P + p) * Q;
    for (int j = 0; j < QWI; ++j) {
      const int q = q0 + tq + j * QDIM;
      if (q < Q) STORE1(acc[i][j], yo + q);
    }
  }
}
