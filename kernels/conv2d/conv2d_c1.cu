// conv2d for the cuda backend, the single-input-channel kernel (C = 1), picked by the library
// when C == 1 and correct for any C. The same plan as conv2d_c1.cl: a block owns PDIM output
// rows x QWG columns and ALL K filters; it stages the tile's input window in shared memory once
// (zero outside the image) and runs through the filters KWI at a time, each thread keeping
// KWI x QWI accumulators in registers and writing each output once (coalesced along a row).
// Every thread reads the same weight at the same time: a broadcast through the read-only cache.
// With C > 1 the window is restaged per channel and per filter group (correct, not fast). A
// window too large for shared memory (huge dilations) reads global memory directly.
//
// Parameters (all #defines):
//   QWG    output columns per block; QDIM threads along them (blockDim.x)
//   PDIM   output rows per block, one per thread row (blockDim.y)
//   KWI    filters per pass (accumulators: KWI * QWI per thread)
//   XLM    floats of input window held in shared memory
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define QWI (QWG / QDIM)
#define THREADS (QDIM * PDIM)

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d_c1(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, int C,
          int H, int W, int K, int R, int S, int stride, int pad, int dil) {
  __shared__ float Xs[XLM];  // (rows, cols) of the input window
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int tq = threadIdx.x, tp = threadIdx.y, tid = tp * QDIM + tq;
  const int q0 = blockIdx.x * QWG, p0 = blockIdx.y * PDIM, n = blockIdx.z;
  const int p = p0 + tp;
  const int rows = (PDIM - 1) * stride + (R - 1) * dil + 1;
  const int cols = (QWG - 1) * stride + (S - 1) * dil + 1;
  const int h0 = p0 * stride - pad, v0 = q0 * stride - pad;
  const bool staged = rows * cols <= XLM;
  const int rs = R * S, crs = C * rs;
  const T* xn = x + (long long)n * C * H * W;

  for (int k0 = 0; k0 < K; k0 += KWI) {
    float acc[KWI][QWI];
#pragma unroll
    for (int i = 0; i < KWI; ++i)
#pragma unroll
      for (int j = 0; j < QWI; ++j) acc[i][j] = 0.0f;
    for (int c = 0; c < C; ++c) {
      const T* xc = xn + (long long)c * H * W;
      if (staged) {
        if (C > 1 || k0 == 0) {
          __syncthreads();
          for (int t = tid; t < rows * cols; t += THREADS) {
            const int h = h0 + t / cols, v = v0 + t % cols;
            Xs[t] = h >= 0 && h < H && v >= 0 && v < W ? kf_to_f32(xc[(long long)h * W + v]) : 0.0f;
          }
          __syncthreads();
        }
        for (int r = 0; r < R; ++r)
          for (int s = 0; s < S; ++s) {
            float xv[QWI];
#pragma unroll
            for (int j = 0; j < QWI; ++j)
              xv[j] = Xs[(tp * stride + r * dil) * cols + (tq + j * QDIM) * stride + s * dil];
#pragma unroll
            for (int i = 0; i < KWI; ++i) {
              const float wv = kf_to_f32(__ldg(w + (long long)min(k0 + i, K - 1) * crs + c * rs + r * S + s));
#pragma unroll
              for (int j = 0; j < QWI; ++j) acc[i][j] = fmaf(wv, xv[j], acc[i][j]);
            }
          }
      } else {
        for (int r = 0; r < R; ++r) {
          const int h = p * stride - pad + r * dil;
          if (h < 0 || h >= H) continue;
          for (int s = 0; s < S; ++s)
#pragma unroll
            for (int j = 0; j < QWI; ++j) {
              const int v = (q0 + tq + j * QDIM) * stride - pad + s * dil;
              if (v < 0 || v >= W) continue;
              const float xv = kf_to_f32(__ldg(xc + (long long)h * W + v));
#pragma unroll
              for (int i = 0; i < KWI; ++i)
                acc[i][j] = fmaf(kf_to_f32(__ldg(w + (long long)min(k0 + i, K - 1) * crs + c * rs + r * S + s)), xv, acc[i][j]);
            }
        }
      }
    }
    if (p < P)
#pragma unroll
      for (int i = 0; i < KWI; ++i) {
        if (k0 + i >= K) break;
        T* yo = y + (((long long)n * K + k0 + i) * P + p) * Q;
#pragma unroll
        for (int j = 0; j < QWI; ++j) {
          const int q = q0 + tq + j * QDIM;
          if (q < Q) yo[q] = kf_from_f32(acc[i][j]);
        }
      }
  }
}
