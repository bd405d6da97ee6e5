// conv2d_nchw8c and conv2d_nchw8c_xplain for the opencl backend: direct convolution with the
// filters and y blocked by 8 (w OIhw8i8o or OIhw8o, y nChw8c), x blocked by XB = 8 (nChw8c) or
// plain (XB = 1); see conv2d_nchw8c_problem.cpp. Any R, S, stride, pad, dil.
// Work-item (tq, tk) of work-group (gx, gy, n*P + p) computes QWI output pixels, q = (gx*QDIM +
// tq)*QWI + j, for the 8 filters of block kb = gy*KDIM + tk: QWI float8 accumulators. Per
// (channel block, tap) it loads the block's XB x 8 weights as XB float8 (one per input channel)
// and each pixel's XB channels (one float8 when XB = 8), then 8*XB lane-broadcast FMAs per
// pixel. Straight from
// global memory, through the cache: the weights of a filter block are read by the QDIM
// work-items of a row, the pixels by the KDIM filter blocks (simple and correct; the cpu
// kernel is the tuned one).
//
// Parameters (all #defines):
//   XB    channels per block of x: 8 or 1, fixed by the problem's spec
//   QWI   output pixels per work-item
//   QDIM  work-items along the output row (local size x)
//   KDIM  filter blocks per work-group (local size y)
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout.
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define KF_FMA8(acc, xv, w)                                                                  \
  acc = fma((float8)(xv.s0), w[0], acc), acc = fma((float8)(xv.s1), w[1], acc),             \
  acc = fma((float8)(xv.s2), w[2], acc), acc = fma((float8)(xv.s3), w[3], acc),             \
  acc = fma((float8)(xv.s4), w[4], acc), acc = fma((float8)(xv.s5), w[5], acc),             \
  acc = fma((float8)(xv.s6), w[6], acc), acc = fma((float8)(xv.s7), w[7], acc)

__kernel __attribute__((reqd_work_group_size(QDIM, KDIM, 1)))
void conv2d_nchw8c(__global const T* x, __global const T* w, __global T* y, int N, int C, int H,
                   int W, int K, int R, int S, int stride, int pad, int dil) {
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int CB = C / XB, K8 = K / 8;
  const int q0 = (get_group_id(0) * QDIM + get_local_id(0)) * QWI;
  const int kb = get_group_id(1) * KDIM + get_local_id(1);
  const int n = get_group_id(2) / P, p = get_group_id(2) % P;
  if (kb >= K8 || q0 >= Q) return;  // no barrier in this kernel

  float8 acc[QWI];
  for (int j = 0; j < QWI; ++j) acc[j] = (float8)(0.0f);
  for (int cb = 0; cb < CB; ++cb)
    for (int r = 0; r < R; ++r) {
      const int h = p * stride - pad + r * dil;
      if (h < 0 || h >= H) continue;
      __global const T* xr = x + (((long)n * CB + cb) * H + h) * W * XB;
      __global const T* wr = w + (((long)kb * CB + cb) * R + r) * S * XB * 8;
      for (int s = 0; s < S; ++s) {
        float8 wv[XB];
        for (int ci = 0; ci < XB; ++ci) wv[ci] = KF_LOADN(8, wr + (s * XB + ci) * 8);
#pragma unroll
        for (int j = 0; j < QWI; ++j) {
          const int col = (q0 + j) * stride - pad + s * dil;
          if (col < 0 || col >= W) continue;
#if XB == 8
          const float8 xv = KF_LOADN(8, xr + (long)col * 8);
          KF_FMA8(acc[j], xv, wv);
#else
          for (int ci = 0; ci < XB; ++ci) acc[j] = fma((float8)(kf_load(xr + (long)col * XB + ci)), wv[ci], acc[j]);
#endif
        }
      }
    }
  for (int j = 0; j < QWI && q0 + j < Q; ++j)
    KF_STOREN(8, acc[j], y + ((((long)n * K8 + kb) * P + p) * Q + q0 + j) * 8);
}
