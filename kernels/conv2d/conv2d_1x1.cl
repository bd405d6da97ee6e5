// conv2d for the opencl backend, the 1x1 kernel (R = S = 1), picked by the library when
// R == S == 1. A 1x1 convolution is a GEMM per image,
// Y_n[K, P*Q] = W[K, C] x X_n[C, P*Q], column j = p*Q + q of X_n being the input pixel
// (p*stride - pad, q*stride - pad), zero outside the image. A work-group owns QWG = QDIM*VQ
// output pixels (of the flattened P*Q plane, so narrow images fill whole vectors) x KWG =
// KDIM*KWI filters of one image; work-item (tq, tk) keeps KWI filters x VQ pixels in KWI float
// vectors and walks the C channels: per channel one VQ-wide load of X_n (a vector load when the
// pixels are contiguous: stride 1, no padding) feeds KWI FMAs with broadcast weights. Inputs and
// weights are read from global memory through the cache (on a CPU device local memory is
// ordinary memory, and each X value is reused KWI times from registers, KWG times from cache).
// With a window (R, S > 1) the same loop runs over (c, r, s): im2col on the fly, correct for
// every size the problem accepts (so shape fuzzing exercises it fully), not the fast plan.
//
// Parameters (all #defines):
//   VQ     pixels per work-item, one float vector (1, 2, 4, 8, 16)
//   QDIM   work-items along the pixels (local size x)
//   KDIM   work-items along the filters (local size y)
//   KWI    filters per work-item (KWI vector accumulators)
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage).
#define QWG (QDIM * VQ)

typedef kf_storage T;          // the dtype's storage type (the prelude's)
typedef KF_FLOATN(VQ) floatV;  // VQ floats

__kernel __attribute__((reqd_work_group_size(QDIM, KDIM, 1)))
void conv2d_1x1(__global const T* x, __global const T* w, __global T* y, int N, int C, int H,
                int W, int K, int R, int S, int stride, int pad, int dil) {
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1, PQ = P * Q, crs = C * R * S;
  const int j0 = get_group_id(0) * QWG + get_local_id(0) * VQ;
  const int k0 = (get_group_id(1) * KDIM + get_local_id(1)) * KWI, n = get_group_id(2);
  const long plane = (long)H * W;
  __global const T* xn = x + (long)n * C * plane;

  // Where each of this work-item's pixels starts its window (past P*Q: far outside the image).
  int hb[VQ], vb[VQ];
  for (int l = 0; l < VQ; ++l) {
    const int j = j0 + l;
    hb[l] = j < PQ ? j / Q * stride - pad : -H - dil * R;
    vb[l] = j % Q * stride - pad;
  }
#if !defined(KF_DTYPE_FP16) && !defined(KF_DTYPE_BF16)
  const bool contiguous = R * S == 1 && stride == 1 && pad == 0 && j0 + VQ <= PQ;
#else  // vector loads of 16-bit storage measured 1.2x slower (fp16) or level (bf16) on PoCL
  const bool contiguous = false;
#endif

  floatV acc[KWI];
  for (int i = 0; i < KWI; ++i) acc[i] = (floatV)(0.0f);
  for (int e = 0; e < crs; ++e) {
    const int c = e / (R * S), r = e / S % R, s = e % S;
    __global const T* xc = xn + c * plane;
    floatV xv;
    if (contiguous) {
      xv = KF_LOADN(VQ, xc + j0);
    } else {
      float a[VQ];
      for (int l = 0; l < VQ; ++l) {
        const int h = hb[l] + r * dil, v = vb[l] + s * dil;
        a[l] = h >= 0 && h < H && v >= 0 && v < W ? kf_load(xc + (long)h * W + v) : 0.0f;
      }
      xv = KF_VLOAD(VQ, a);
    }
#pragma unroll
    for (int i = 0; i < KWI; ++i)
      acc[i] = fma((floatV)(kf_load(w + (long)min(k0 + i, K - 1) * crs + e)), xv, acc[i]);
  }
  for (int i = 0; i < KWI && k0 + i < K; ++i) {
    __global T* yo = y + ((long)n * K + k0 + i) * PQ + j0;
    float a[VQ];
    KF_VSTORE(VQ, acc[i], a);
    for (int l = 0; l < VQ && j0 + l < PQ; ++l) kf_store(a[l], yo + l);
  }
}
