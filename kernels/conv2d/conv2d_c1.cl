// conv2d for the opencl backend, the single-input-channel kernel (C = 1), picked by the library
// when C == 1 and correct for any C. With one channel each input value feeds K*R*S products and
// the traffic is almost all output, so a work-group owns a 2-D output tile (PDIM rows x QWG =
// QDIM*VQ columns) and ALL K filters: it stages the tile's input window in local memory once
// (zero outside the image, each row split into `stride` phases so that the VQ values a
// work-item needs for one window tap are adjacent) and then runs through the filters KWI at a
// time, each work-item accumulating KWI filters x VQ columns (KWI float vectors) and writing
// each output once. Every work-item reads the same weight at the same time (a broadcast).
// With C > 1, or a window too large for local memory (huge dilations), it reads global memory
// directly (correct, not fast).
//
// Parameters (all #defines):
//   VQ     vector width along the output row (1, 2, 4, 8, 16); QWG = QDIM * VQ columns
//   QDIM   work-items along the columns (local size x)
//   PDIM   output rows per work-group, one per work-item row (local size y)
//   KWI    filters per pass (KWI vector accumulators per work-item)
//   XLM    floats of input window held in local memory
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage).
#define QWG (QDIM * VQ)
#define THREADS (QDIM * PDIM)

typedef kf_storage T;          // the dtype's storage type (the prelude's)
typedef KF_FLOATN(VQ) floatV;  // VQ floats; lanes are only ever reached through a private
                               // copy (KF_VLOAD/KF_VSTORE), so accumulators stay in registers

__kernel __attribute__((reqd_work_group_size(QDIM, PDIM, 1)))
void conv2d_c1(__global const T* x, __global const T* w, __global T* y, int N, int C, int H,
               int W, int K, int R, int S, int stride, int pad, int dil) {
  __local float Xl[XLM];  // (rows, stride, jw): the input window, phase-split
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int tq = get_local_id(0), tp = get_local_id(1), tid = tp * QDIM + tq;
  const int q0 = get_group_id(0) * QWG, p0 = get_group_id(1) * PDIM, n = get_group_id(2);
  const int p = p0 + tp;
  const int rows = (PDIM - 1) * stride + (R - 1) * dil + 1;
  const int jw = QWG + ((S - 1) * dil) / stride, span = stride * jw;
  const int h0 = p0 * stride - pad, v0 = q0 * stride - pad;
  const int rs = R * S, crs = C * rs;
  __global const T* xn = x + (long)n * C * H * W;

  // One channel and a window that fits: staged once, then no barrier inside the filter loop
  // (so a CPU OpenCL keeps the accumulators in registers). Otherwise: straight from global.
  const bool staged = C == 1 && rows * span <= XLM;
  if (staged) {
    for (int t = tid; t < rows * span; t += THREADS) {
      const int h = h0 + t / span, v = v0 + t % jw * stride + t % span / jw;
      Xl[t] = h >= 0 && h < H && v >= 0 && v < W ? kf_load(xn + (long)h * W + v) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  for (int k0 = 0; k0 < K; k0 += KWI) {
    floatV acc[KWI];
    for (int i = 0; i < KWI; ++i) acc[i] = (floatV)(0.0f);
    if (staged) {
      for (int r = 0; r < R; ++r) {
        __local const float* xr = Xl + (tp * stride + r * dil) * span + tq * VQ;
        for (int s = 0; s < S; ++s) {
          const int o = s * dil;
          const floatV xv = KF_VLOAD(VQ, xr + (o % stride) * jw + o / stride);
#pragma unroll
          for (int i = 0; i < KWI; ++i)
            acc[i] = fma((floatV)(kf_load(w + (long)min(k0 + i, K - 1) * rs + r * S + s)), xv, acc[i]);
        }
      }
    } else {
      for (int i = 0; i < KWI; ++i) {
        float a[VQ];
        for (int l = 0; l < VQ; ++l) a[l] = 0.0f;
        for (int e = 0; e < crs; ++e) {
          const int c = e / rs, r = e / S % R, s = e % S;
          const int h = p * stride - pad + r * dil;
          if (h < 0 || h >= H) continue;
          const float wv = kf_load(w + (long)min(k0 + i, K - 1) * crs + e);
          for (int l = 0; l < VQ; ++l) {
            const int v = (q0 + tq * VQ + l) * stride - pad + s * dil;
            if (v >= 0 && v < W) a[l] = fma(wv, kf_load(xn + ((long)c * H + h) * W + v), a[l]);
          }
        }
        acc[i] = KF_VLOAD(VQ, a);
      }
    }
    if (p < P)
      for (int i = 0; i < KWI && k0 + i < K; ++i) {
        __global T* yo = y + (((long)n * K + k0 + i) * P + p) * Q + q0 + tq * VQ;
        const int valid = Q - q0 - tq * VQ;
        float a[VQ];
        KF_VSTORE(VQ, acc[i], a);
        for (int l = 0; l < VQ && l < valid; ++l) kf_store(a[l], yo + l);
      }
  }
}
