// conv2d for the opencl backend, the general kernel: direct convolution, NCHW, any sizes.
// A work-group owns KWG filters x QWG output columns of one output row (n, p); work-item
// (tq, tk) computes VQ adjacent columns (one floatV) for KWI = KWG/KDIM filters, tk + i*KDIM.
// The reduction over (c, r) input rows runs in slices that fit local memory; per slice the
// work-group copies
//   Xl: for each (c, r) the input row segment its columns read, zero outside the image, split
//       into `stride` phases (Xl[pair][phase][j] = x[.., v0 + j*stride + phase]) so that the VQ
//       values one work-item needs for window column s are adjacent: one vector load;
//   Wl: with WLOCAL = 1, the slice's weights of its KWG filters, [(c, r, s)][KWG] (a GPU's
//       choice; on a CPU device the weights come straight from cache, WLOCAL = 0);
// each input element is loaded from global memory once per work-group and slice. The math is
// in explicit vectors (VQ lanes), which is what a CPU OpenCL (PoCL) turns into SIMD code.
// A window too wide for local memory (huge dilations) takes a direct path from global memory.
//
// Parameters (all #defines):
//   VQ         vector width along the output row (1, 2, 4, 8, 16); QWG = QDIM * VQ columns
//   QDIM, KDIM work-items along the columns (local size x) and the filters (local size y)
//   KWG        filters per work-group
//   EW         reduction elements (c, r, s) per slice: Wl holds EW x KWG floats
//   XLM        floats of input staged per slice
//   WLOCAL     1: stage the weights in local memory too; 0: read them from global memory
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout.
#define QWG (QDIM * VQ)
#define KWI (KWG / KDIM)
#define THREADS (QDIM * KDIM)

typedef kf_storage T;          // the dtype's storage type (the prelude's)
typedef KF_FLOATN(VQ) floatV;  // VQ floats; lanes are only ever reached through a private
                               // copy (KF_VLOAD/KF_VSTORE), so accumulators stay in registers

__kernel __attribute__((reqd_work_group_size(QDIM, KDIM, 1)))
void conv2d(__global const T* x, __global const T* w, __global T* y, int N, int C, int H, int W,
            int K, int R, int S, int stride, int pad, int dil) {
  __local float Xl[XLM];       // (pairs, stride, jw)
#if WLOCAL
  __local float Wl[EW * KWG];  // (pairs * S, KWG)
#endif
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int tq = get_local_id(0), tk = get_local_id(1), tid = tk * QDIM + tq;
  const int q0 = get_group_id(0) * QWG, k0 = get_group_id(1) * KWG;
  const int n = get_group_id(2) / P, p = get_group_id(2) % P;
  const int jw = QWG + ((S - 1) * dil) / stride;  // values per phase
  const int span = stride * jw;                   // values per (c, r) pair
  const int v0 = q0 * stride - pad;               // first input column of the tile
  const int crs = C * R * S;
  __global const T* xn = x + (long)n * C * H * W;

  floatV acc[KWI];
  for (int i = 0; i < KWI; ++i) acc[i] = (floatV)(0.0f);

  if (span <= XLM && S <= EW) {
    const int per = min(XLM / span, EW / S);  // (c, r) pairs per slice
    for (int e0 = 0; e0 < C * R; e0 += per) {
      const int np = min(per, C * R - e0);
      for (int e = 0; e < np; ++e) {  // consecutive work-items: consecutive columns
        const int c = (e0 + e) / R, h = p * stride - pad + (e0 + e) % R * dil;
        __global const T* xr = xn + ((long)c * H + h) * W;
        for (int ph = 0; ph < stride; ++ph)
          for (int j = tid; j < jw; j += THREADS) {
            const int col = v0 + j * stride + ph;
            Xl[(e * stride + ph) * jw + j] = h >= 0 && h < H && col >= 0 && col < W ? kf_load(xr + col) : 0.0f;
          }
      }
#if WLOCAL
      for (int kk = 0; kk < KWG; ++kk) {  // consecutive work-items: one filter's weights
        const int k = k0 + kk;
        for (int e = tid; e < np * S; e += THREADS)
          Wl[e * KWG + kk] = k < K ? kf_load(w + (long)k * crs + e0 * S + e) : 0.0f;
      }
#endif
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int e = 0; e < np; ++e)
        for (int s = 0; s < S; ++s) {
          const int o = s * dil;
          const floatV xv = KF_VLOAD(VQ, Xl + e * span + (o % stride) * jw + o / stride + tq * VQ);
#if WLOCAL
          __local const float* wr = Wl + (e * S + s) * KWG + tk;
#pragma unroll
          for (int i = 0; i < KWI; ++i) acc[i] = fma((floatV)(wr[i * KDIM]), xv, acc[i]);
#else
          __global const T* wr = w + (long)(k0 + tk) * crs + (e0 + e) * S + s;
#pragma unroll
          for (int i = 0; i < KWI; ++i)
            acc[i] = fma((floatV)(k0 + tk + i * KDIM < K ? kf_load(wr + (long)i * KDIM * crs) : 0.0f), xv, acc[i]);
#endif
        }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  } else {
    for (int i = 0; i < KWI; ++i) {
      const int k = min(k0 + tk + i * KDIM, K - 1);
      float a[VQ];
      for (int l = 0; l < VQ; ++l) a[l] = 0.0f;
      for (int e = 0; e < crs; ++e) {
        const int c = e / (R * S), r = e / S % R, s = e % S;
        const int h = p * stride - pad + r * dil;
        if (h < 0 || h >= H) continue;
        const float wv = kf_load(w + (long)k * crs + e);
        for (int l = 0; l < VQ; ++l) {
          const int col = v0 + (tq * VQ + l) * stride + s * dil;
          if (col >= 0 && col < W) a[l] = fma(wv, kf_load(xn + ((long)c * H + h) * W + col), a[l]);
        }
      }
      acc[i] = KF_VLOAD(VQ, a);
    }
  }

  for (int i = 0; i < KWI; ++i) {
    const int k = k0 + tk + i * KDIM;
    if (k >= K) break;
    __global T* yo = y + (((long)n * K + k) * P + p) * Q + q0 + tq * VQ;
    const int valid = Q - q0 - tq * VQ;
    float a[VQ];
    KF_VSTORE(VQ, acc[i], a);
    for (int l = 0; l < VQ && l < valid; ++l) kf_store(a[l], yo + l);
  }
}
