// spdnn for the cuda backend: the scheme of spdnn.cl (whole network in one launch, WY rows a
// block, WX threads across the neurons, activations alternating between shared memory and the
// row of Y so that the last layer lands in Y; __syncthreads between layers). Generic pointers
// let one loop serve every pair of buffers.
//
// Parameters (#defines): WX threads along neurons, WY rows per block, NMAX shared floats a row.
extern "C" __global__ void __launch_bounds__(WX * WY)
spdnn(const float* __restrict__ Y0, const int* __restrict__ W_idx, const float* __restrict__ W_val,
      const float* __restrict__ bias, float* Y, float* cat, int B, int N, int K, int L) {
  __shared__ float act[WY * NMAX];
  __shared__ int alive[WY];
  const int lx = threadIdx.x, ly = threadIdx.y;
  const int r = blockIdx.y * WY + ly;
  const bool live = r < B;  // rows past B still reach every barrier
  float* loc = act + ly * NMAX;
  float* y = Y + (long long)(live ? r : 0) * N;
  for (int l = 0; l < L; ++l) {
    const int* wi = W_idx + (long long)l * N * K;
    const float* wv = W_val + (long long)l * N * K;
    const float* b = bias + (long long)l * N;
    const bool to_y = (L - 1 - l) % 2 == 0;
    const float* src = l == 0 ? Y0 + (long long)(live ? r : 0) * N : (to_y ? loc : y);
    float* dst = to_y ? y : loc;
    if (live)
      for (int j = lx; j < N; j += WX) {
        float acc = __ldg(b + j);
        for (int t = 0; t < K; ++t)
          acc = fmaf(__ldg(wv + (long long)j * K + t), src[__ldg(wi + (long long)j * K + t)], acc);
        dst[j] = fminf(fmaxf(acc, 0.0f), 32.0f);
      }
    __syncthreads();
  }
  if (lx == 0) alive[ly] = 0;
  __syncthreads();
  if (live) {
    int any = 0;
    for (int j = lx; j < N; j += WX) any |= y[j] > 0.0f;
    if (any) atomicOr(&alive[ly], 1);
  }
  __syncthreads();
  if (live && lx == 0) cat[r] = alive[ly] ? 1.0f : 0.0f;
}
