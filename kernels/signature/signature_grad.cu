// signature_grad for the cuda backend: GX (B,L,D) = d <GS, signature(X)> / dX, the same
// algorithm as signature_grad.cl (read its comment): one block per path, its five truncated
// tensors in the problem's workspace W (a scratch tensor), each step a loop over terms shared by
// the block's threads with __syncthreads() after it.
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)
typedef kf_storage T;  // fp32

// 1/m correctly rounded (one rule with the opencl kernel).
__constant__ float kInv[8] = {0.0f, 1.0f, 0.5f, 0.333333333333f, 0.25f, 0.2f, 0.166666666667f, 0.142857142857f};

// S <- S ⊗ exp(sign Δ), Δ = xp[D + i] - xp[i]; levels from the top down.
__device__ void mul_exp(T* __restrict__ S, const T* __restrict__ xp, float sign, const long long* off,
                        const long long* size, int D, int LEVEL, int lid) {
  for (int k = LEVEL; k >= 1; --k) {
    for (long long e = lid; e < size[k]; e += THREADS) {
      long long pw = size[k - 1];  // D^(k-m): the word's first m letters are e / pw
      int i = (int)(e / pw);
      float acc = sign * (xp[D + i] - xp[i]) * kInv[k];
      for (int m = 1; m < k; ++m) {
        const long long prefix = e / pw;
        pw /= D;
        i = (int)((e / pw) % D);
        acc = (S[off[m] + prefix] + acc) * (sign * (xp[D + i] - xp[i]) * kInv[k - m]);
      }
      S[off[k] + e] += acc;
    }
    __syncthreads();
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
signature_grad(const T* __restrict__ X, const T* __restrict__ GS, T* __restrict__ GX, T* __restrict__ W, int B, int L,
               int D, int LEVEL) {
  const int lid = threadIdx.x;
  const long long b = blockIdx.x;
  long long off[9], size[9];  // level k at off[k], D^k words; off[LEVEL + 1] = siglen + 1
  off[0] = 0, size[0] = 1;
  for (int k = 1; k <= LEVEL + 1; ++k) off[k] = off[k - 1] + size[k - 1], size[k] = size[k - 1] * D;
  const long long n = off[LEVEL + 1];
  T* S = W + b * 5 * n;
  T* E = S + n;
  T* gS = E + n;
  T* gA = gS + n;
  T* gE = gA + n;
  const T* x = X + b * L * D;
  T* gx = GX + b * L * D;

  for (long long e = lid; e < n; e += THREADS) S[e] = e == 0 ? 1.0f : 0.0f, gS[e] = e == 0 ? 0.0f : GS[b * (n - 1) + e - 1];
  for (long long e = lid; e < (long long)L * D; e += THREADS) gx[e] = 0.0f;
  __syncthreads();
  for (int t = 1; t < L; ++t) mul_exp(S, x + (long long)(t - 1) * D, 1.0f, off, size, D, LEVEL, lid);

  for (int t = L - 1; t >= 1; --t) {
    const T* xp = x + (long long)(t - 1) * D;
    mul_exp(S, xp, -1.0f, off, size, D, LEVEL, lid);  // the prefix before segment t
    for (int m = 0; m <= LEVEL; ++m)
      for (long long w = lid; w < size[m]; w += THREADS) {
        float e = 1.0f;
        long long pw = size[m];
        for (int j = 1; j <= m; ++j) {
          pw /= D;
          const int i = (int)((w / pw) % D);
          e *= (xp[D + i] - xp[i]) * kInv[j];
        }
        E[off[m] + w] = e;
      }
    __syncthreads();
    for (int j = 0; j <= LEVEL; ++j)
      for (long long u = lid; u < size[j]; u += THREADS) {
        float ga = 0.0f, ge = 0.0f;
        for (int k = j; k <= LEVEL; ++k) {
          const long long sv = size[k - j];
          const T* g = gS + off[k] + u * sv;
          const T* ev = E + off[k - j];
          for (long long v = 0; v < sv; ++v) ga += g[v] * ev[v];
          if (j == 0) continue;  // exp's level 0 is the constant 1
          const T* a = S + off[k - j];
          for (long long p = 0; p < sv; ++p) ge += gS[off[k] + p * size[j] + u] * a[p];
        }
        gA[off[j] + u] = ga;
        gE[off[j] + u] = ge;
      }
    __syncthreads();
    for (int m = LEVEL; m >= 2; --m) {
      for (long long p = lid; p < size[m - 1]; p += THREADS) {
        float s = 0.0f;
        for (int i = 0; i < D; ++i) s += gE[off[m] + p * D + i] * (xp[D + i] - xp[i]);
        gE[off[m - 1] + p] += s * kInv[m];
      }
      __syncthreads();
    }
    for (int i = lid; i < D; i += THREADS) {
      float gd = 0.0f;
      for (int m = 1; m <= LEVEL; ++m) {
        float s = 0.0f;
        for (long long p = 0; p < size[m - 1]; ++p) s += gE[off[m] + p * D + i] * E[off[m - 1] + p];
        gd += s * kInv[m];
      }
      gx[(long long)t * D + i] += gd;
      gx[(long long)(t - 1) * D + i] -= gd;
    }
    T* swap = gS;
    gS = gA, gA = swap;
    __syncthreads();
  }
}
