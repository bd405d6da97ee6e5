// conv2d_nchw8c and conv2d_nchw8c_xplain for the cuda backend: direct convolution with the
// filters and y blocked by 8 (w OIhw8i8o or OIhw8o, y nChw8c), x blocked by XB = 8 (nChw8c) or
// plain (XB = 1); see conv2d_nchw8c_problem.cpp. Any R, S, stride, pad, dil.
// Thread (tx, ty) of block (n*P + p, by, bz) owns one output element: lane ko = tx % 8 of pixel
// q = by*QDIM + tx/8, filter block kb = bz*KDIM + ty. So 8 adjacent threads are one pixel's 8
// filters: they write 32 adjacent bytes of y and read 8 adjacent weights of w (the o lanes are
// innermost in OIhw8i8o), while the input value they share is one broadcast. Each thread walks
// (channel block, tap, channel) through the read-only cache. A simple twin of the cpu kernel:
// it compiles (NVRTC, every test run) and is not tuned.
//
// Parameters (all #defines):
//   XB    channels per block of x: 8 or 1, fixed by the problem's spec
//   QDIM  output pixels per block (blockDim.x = 8 * QDIM)
//   KDIM  filter blocks per block (blockDim.y)
// Grid: x = N * P (the large dimension), y = ceil(Q / QDIM), z = ceil(K/8 / KDIM).
typedef kf_storage T;  // the dtype's storage type (the prelude's)

extern "C" __global__ void __launch_bounds__(8 * QDIM * KDIM)
conv2d_nchw8c(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, int C,
              int H, int W, int K, int R, int S, int stride, int pad, int dil) {
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int CB = C / XB, K8 = K / 8;
  const int q = blockIdx.y * QDIM + threadIdx.x / 8, ko = threadIdx.x % 8;
  const int kb = blockIdx.z * KDIM + threadIdx.y;
  const int n = blockIdx.x / P, p = blockIdx.x % P;
  if (q >= Q || kb >= K8) return;
  float acc = 0.0f;
  for (int cb = 0; cb < CB; ++cb)
    for (int r = 0; r < R; ++r) {
      const int h = p * stride - pad + r * dil;
      if (h < 0 || h >= H) continue;
      const T* xr = x + (((long long)n * CB + cb) * H + h) * W * XB;
      const T* wr = w + (((long long)kb * CB + cb) * R + r) * S * XB * 8 + ko;
      for (int s = 0; s < S; ++s) {
        const int col = q * stride - pad + s * dil;
        if (col < 0 || col >= W) continue;
#pragma unroll
        for (int ci = 0; ci < XB; ++ci)
          acc = fmaf(kf_to_f32(__ldg(xr + (long long)col * XB + ci)), kf_to_f32(__ldg(wr + (s * XB + ci) * 8)), acc);
      }
    }
  y[((((long long)n * K8 + kb) * P + p) * Q + q) * 8 + ko] = kf_from_f32(acc);
}
