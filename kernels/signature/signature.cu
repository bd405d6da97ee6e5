// signature for the cuda backend: SIG (B, D+...+D^LEVEL) of the paths X (B,L,D), levels
// concatenated, each level row-major (kernels/signature/README.md).
//
// One block per path; the signature is built in place in the path's output row, segment by
// segment (Chen's identity S <- S ⊗ exp(Δ)), levels from the top down with __syncthreads()
// between levels (level k reads the lower levels, which must still hold their old values). The
// block's threads share a level's terms; each term runs Horner's rule over its word's prefixes:
//   S^k[i1..ik] += ((Δ_i1/k + S^1[i1]) Δ_i2/(k-1) + S^2[i1 i2]) Δ_i3/(k-2) ... Δ_ik/1
// The segment's scaled increments Δ_i/m sit in shared memory (D*LEVEL floats, D <= MAXD).
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)
//   MAXD     the most channels the shared table holds (a constraint keeps D <= MAXD)
typedef kf_storage T;  // fp32

// 1/m correctly rounded (as the opencl kernel's; CUDA's division is IEEE, but one rule for all).
__constant__ float kInv[7] = {0.0f, 1.0f, 0.5f, 0.333333333333f, 0.25f, 0.2f, 0.166666666667f};

extern "C" __global__ void __launch_bounds__(THREADS)
signature(const T* __restrict__ X, T* __restrict__ SIG, int B, int L, int D, int LEVEL) {
  __shared__ float dm[MAXD * 6];  // dm[(m-1)*D + i] = Δ_i / m
  const int tid = threadIdx.x;
  const long long b = blockIdx.x;
  long long off[8], size[8];
  size[0] = 1, off[1] = 0;
  for (int k = 1; k <= LEVEL; ++k) size[k] = size[k - 1] * D, off[k + 1] = off[k] + size[k];
  const long long siglen = off[LEVEL + 1];
  T* S = SIG + b * siglen;
  for (long long e = tid; e < siglen; e += THREADS) S[e] = 0.0f;
  const T* x = X + b * L * D;
  for (int t = 0; t + 1 < L; ++t, x += D) {
    __syncthreads();  // the last level of the previous segment is written, dm is free
    for (int e = tid; e < D * LEVEL; e += THREADS) {
      const int m = e / D + 1, i = e % D;
      dm[e] = (x[D + i] - x[i]) * kInv[m];
    }
    __syncthreads();
    for (int k = LEVEL; k >= 1; --k) {
      for (long long e = tid; e < size[k]; e += THREADS) {
        long long pw = size[k - 1];  // D^(k-m): the word's first m letters are e / pw
        float acc = dm[(k - 1) * D + (int)(e / pw)];
        for (int m = 1; m < k; ++m) {
          const long long prefix = e / pw;
          pw /= D;
          acc = (S[off[m] + prefix] + acc) * dm[(k - m - 1) * D + (int)((e / pw) % D)];
        }
        S[off[k] + e] += acc;
      }
      __syncthreads();
    }
  }
}
