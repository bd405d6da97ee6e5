// conv2d for the cuda backend, the 1x1 kernel (R = S = 1), picked by the library when
// R == S == 1. A 1x1 convolution is a GEMM per image,
// Y_n[K, P*Q] = W[K, C] x X_n[C, P*Q], column j = p*Q + q of X_n being the input pixel
// (p*stride - pad, q*stride - pad), zero outside the image. A block owns QWG output pixels of
// the flattened P*Q plane (so narrow images still fill warps) x KWG filters of one image. Per
// slice of CS channels it stages the X_n columns (gathered: strided, zero-padded) and the
// weights in shared memory, then each thread accumulates QWI = QWG/QDIM pixels (strided by
// QDIM: coalesced) x KWI = KWG/KDIM filters in registers. With a window (R, S > 1) the slices
// run over (c, r, s): im2col on the fly, correct for every accepted size, not the fast plan.
//
// Parameters (all #defines):
//   QWG, QDIM   pixels per block, threads along them (blockDim.x)
//   KWG, KDIM   filters per block, threads along them (blockDim.y)
//   CS          reduction steps (c, r, s) per shared-memory slice
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define QWI (QWG / QDIM)
#define KWI (KWG / KDIM)
#define THREADS (QDIM * KDIM)

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d_1x1(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, int C,
           int H, int W, int K, int R, int S, int stride, int pad, int dil) {
  __shared__ float Xs[CS][QWG];  // channels x pixels
  __shared__ float Ws[CS][KWG];  // channels x filters
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1, PQ = P * Q;
  const int RS = R * S, crs = C * RS;
  const int tq = threadIdx.x, tk = threadIdx.y, tid = tk * QDIM + tq;
  const int j0 = blockIdx.x * QWG, k0 = blockIdx.y * KWG, n = blockIdx.z;
  const long long plane = (long long)H * W;
  const T* xn = x + (long long)n * C * plane;

  float acc[KWI][QWI];
#pragma unroll
  for (int i = 0; i < KWI; ++i)
#pragma unroll
    for (int l = 0; l < QWI; ++l) acc[i][l] = 0.0f;

  for (int e0 = 0; e0 < crs; e0 += CS) {
    for (int t = tid; t < CS * QWG; t += THREADS) {
      const int e = e0 + t / QWG, j = j0 + t % QWG, c = e / RS, r = e % RS / S, s = e % S;
      const int h = j / Q * stride - pad + r * dil, v = j % Q * stride - pad + s * dil;
      const bool in = e < crs && j < PQ && h >= 0 && h < H && v >= 0 && v < W;
      Xs[t / QWG][t % QWG] = in ? kf_to_f32(xn[c * plane + (long long)h * W + v]) : 0.0f;
    }
    for (int t = tid; t < CS * KWG; t += THREADS) {  // consecutive threads: consecutive steps
      const int e = e0 + t % CS, k = k0 + t / CS;
      Ws[t % CS][t / CS] = e < crs && k < K ? kf_to_f32(w[(long long)k * crs + e]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int c = 0; c < CS; ++c) {
      float xv[QWI];
#pragma unroll
      for (int l = 0; l < QWI; ++l) xv[l] = Xs[c][tq + l * QDIM];
#pragma unroll
      for (int i = 0; i < KWI; ++i) {
        const float wv = Ws[c][tk + i * KDIM];
#pragma unroll
        for (int l = 0; l < QWI; ++l) acc[i][l] = fmaf(wv, xv[l], acc[i][l]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < KWI; ++i) {
    const int k = k0 + tk + i * KDIM;
    if (k >= K) continue;
#pragma unroll
    for (int l = 0; l < QWI; ++l) {
      const int j = j0 + tq + l * QDIM;
      if (j < PQ) y[((long long)n * K + k) * PQ + j] = kf_from_f32(acc[i][l]);
    }
  }
}
