// conv2d for the opencl backend, the single-input-channel kernel (C = 1), picked by the library
// when C == 1 and correct for any C. With one channel each input value feeds K*R*S products and
// the traffic is almost all output, so a work-group owns a 2-D output tile (PDIM rows x QWG
// columns) and ALL K filters: it stages the tile's input window in local memory once (rows
// (PDIM-1)*stride + (R-1)*dil + 1, columns (QWG-1)*stride + (S-1)*dil + 1, zero outside the
// image) and then runs through the filters KWI at a time, each work-item accumulating KWI
// filters x QWI columns in registers and writing each output once. The weights are read in the
// same order by every work-item (one broadcast load from cache per filter tap).
// With C > 1 the window is restaged per channel and per filter group (correct, not fast).
// A window too large for local memory (huge dilations) takes a direct path from global memory.
//
// Parameters (all #defines):
//   QWG    output columns per work-group; QDIM work-items along them (local size x)
//   PDIM   output rows per work-group, one per work-item row (local size y)
//   KWI    filters per pass (accumulators: KWI * QWI per work-item)
//   XLM    floats of input window held in local memory
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage).
#define QWI (QWG / QDIM)
#define THREADS (QDIM * PDIM)

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

__kernel __attribute__((reqd_work_group_size(QDIM, PDIM, 1)))
void conv2d_c1(__global const T* x, __global const T* w, __global T* y, int N, int C, int H,
               int W, int K, int R, int S, int stride, int pad, int dil) {
  __local float Xl[XLM];  // (rows, cols) of the input window
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int tq = get_local_id(0), tp = get_local_id(1), tid = tp * QDIM + tq;
  const int q0 = get_group_id(0) * QWG, p0 = get_group_id(1) * PDIM, n = get_group_id(2);
  const int p = p0 + tp;
  const int rows = (PDIM - 1) * stride + (R - 1) * dil + 1;
  const int cols = (QWG - 1) * stride + (S - 1) * dil + 1;
  const int h0 = p0 * stride - pad, v0 = q0 * stride - pad;
  const bool staged = rows * cols <= XLM;
  const int rs = R * S, crs = C * rs;
  __global const T* xn = x + (long)n * C * H * W;

  for (int k0 = 0; k0 < K; k0 += KWI) {
    float acc[KWI][QWI];
    for (int i = 0; i < KWI; ++i)
      for (int j = 0; j < QWI; ++j) acc[i][j] = 0.0f;
    for (int c = 0; c < C; ++c) {
      __global const T* xc = xn + (long)c * H * W;
      if (staged) {
        if (C > 1 || k0 == 0) {  // uniform: every work-item meets the same barriers
          barrier(CLK_LOCAL_MEM_FENCE);
          for (int t = tid; t < rows * cols; t += THREADS) {
            const int h = h0 + t / cols, v = v0 + t % cols;
            Xl[t] = h >= 0 && h < H && v >= 0 && v < W ? LOAD1(xc + (long)h * W + v) : 0.0f;
          }
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        for (int r = 0; r < R; ++r)
          for (int s = 0; s < S; ++s) {
            float xv[QWI];
            for (int j = 0; j < QWI; ++j)
              xv[j] = Xl[(tp * stride + r * dil) * cols + (tq + j * QDIM) * stride + s * dil];
            for (int i = 0; i < KWI; ++i) {
              const float wv = LOAD1(w + (long)min(k0 + i, K - 1) * crs + c * rs + r * S + s);
              for (int j = 0; j < QWI; ++j) acc[i][j] = fma(wv, xv[j], acc[i][j]);
            }
          }
      } else {
        for (int r = 0; r < R; ++r) {
          const int h = p * stride - pad + r * dil;
          if (h < 0 || h >= H) continue;
          for (int s = 0; s < S; ++s)
            for (int j = 0; j < QWI; ++j) {
              const int v = (q0 + tq + j * QDIM) * stride - pad + s * dil;
              if (v < 0 || v >= W) continue;
              const float xv = LOAD1(xc + (long)h * W + v);
              for (int i = 0; i < KWI; ++i)
                acc[i][j] = fma(LOAD1(w + (long)min(k0 + i, K - 1) * crs + c * rs + r * S + s), xv, acc[i][j]);
            }
        }
      }
    }
    if (p < P)
      for (int i = 0; i < KWI && k0 + i < K; ++i) {
        __global T* yo = y + (((long)n * K + k0 + i) * P + p) * Q;
        for (int j = 0; j < QWI; ++j) {
          const int q = q0 + tq + j * QDIM;
          if (q < Q) STORE1(acc[i][j], yo + q);
        }
      }
  }
}
