// conv2d for the cuda backend, the general kernel: direct convolution, NCHW, any sizes.
// The same tiling as conv2d.cl: a block owns KWG filters x QWG output columns of one output row
// (n, p); the reduction over (c, r) input rows runs in slices that fit shared memory, each slice
// staging the input row segments its columns read (each element loaded once, zero outside the
// image) and the slice's weights [(c, r, s)][KWG]; each thread accumulates KWI = KWG/KDIM
// filters x QWI = QWG/QDIM columns in registers. A window too wide for shared memory (huge
// dilations) takes a direct path through the read-only cache.
//
// Parameters (all #defines):
//   QWG, KWG   the block's tile: output columns, filters
//   QDIM, KDIM threads along the columns (blockDim.x) and the filters (blockDim.y)
//   EW         reduction elements (c, r, s) per slice: Ws holds EW x KWG floats
//   XLM        floats of input staged per slice
// Grid: x = N * P output rows, y = column tiles, z = filter tiles.
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define QWI (QWG / QDIM)
#define KWI (KWG / KDIM)
#define THREADS (QDIM * KDIM)

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, int C, int H,
       int W, int K, int R, int S, int stride, int pad, int dil) {
  __shared__ float Xs[XLM];       // (pairs, span)
  __shared__ float Ws[EW * KWG];  // (pairs * S, KWG)
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int tq = threadIdx.x, tk = threadIdx.y, tid = tk * QDIM + tq;
  const int n = blockIdx.x / P, p = blockIdx.x % P;
  const int q0 = blockIdx.y * QWG, k0 = blockIdx.z * KWG;
  const int span = (QWG - 1) * stride + (S - 1) * dil + 1;
  const int v0 = q0 * stride - pad;
  const int crs = C * R * S;
  const T* xn = x + (long long)n * C * H * W;

  float acc[KWI][QWI];
#pragma unroll
  for (int i = 0; i < KWI; ++i)
#pragma unroll
    for (int j = 0; j < QWI; ++j) acc[i][j] = 0.0f;

  if (span <= XLM && S <= EW) {
    const int per = min(XLM / span, EW / S);
    for (int e0 = 0; e0 < C * R; e0 += per) {
      const int np = min(per, C * R - e0);
      for (int t = tid; t < np * span; t += THREADS) {
        const int e = e0 + t / span, col = v0 + t % span;
        const int c = e / R, h = p * stride - pad + (e % R) * dil;
        Xs[t] = h >= 0 && h < H && col >= 0 && col < W ? kf_to_f32(xn[((long long)c * H + h) * W + col]) : 0.0f;
      }
      for (int t = tid; t < np * S * KWG; t += THREADS) {
        const int kk = t / (np * S), e = t % (np * S);
        const int k = k0 + kk;
        Ws[e * KWG + kk] = k < K ? kf_to_f32(w[(long long)k * crs + e0 * S + e]) : 0.0f;
      }
      __syncthreads();
      for (int e = 0; e < np; ++e)
        for (int s = 0; s < S; ++s) {
          float wv[KWI], xv[QWI];
#pragma unroll
          for (int i = 0; i < KWI; ++i) wv[i] = Ws[(e * S + s) * KWG + tk + i * KDIM];
#pragma unroll
          for (int j = 0; j < QWI; ++j) xv[j] = Xs[e * span + (tq + j * QDIM) * stride + s * dil];
#pragma unroll
          for (int i = 0; i < KWI; ++i)
#pragma unroll
            for (int j = 0; j < QWI; ++j) acc[i][j] = fmaf(wv[i], xv[j], acc[i][j]);
        }
      __syncthreads();
    }
  } else {
#pragma unroll
    for (int i = 0; i < KWI; ++i) {
      const int k = min(k0 + tk + i * KDIM, K - 1);
      for (int e = 0; e < crs; ++e) {
        const int c = e / (R * S), r = e / S % R, s = e % S;
        const int h = p * stride - pad + r * dil;
        if (h < 0 || h >= H) continue;
        const float wv = kf_to_f32(__ldg(w + (long long)k * crs + e));
#pragma unroll
        for (int j = 0; j < QWI; ++j) {
          const int col = v0 + (tq + j * QDIM) * stride + s * dil;
          if (col >= 0 && col < W)
            acc[i][j] = fmaf(wv, kf_to_f32(__ldg(xn + ((long long)c * H + h) * W + col)), acc[i][j]);
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < KWI; ++i) {
    const int k = k0 + tk + i * KDIM;
    if (k >= K) break;
    T* yo = y + (((long long)n * K + k) * P + p) * Q;
#pragma unroll
    for (int j = 0; j < QWI; ++j) {
      const int q = q0 + tq + j * QDIM;
      if (q < Q) yo[q] = kf_from_f32(acc[i][j]);
    }
  }
}
