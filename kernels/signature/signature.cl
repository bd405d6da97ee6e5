// signature for the opencl backend: SIG (B, D+...+D^LEVEL) of the paths X (B,L,D), levels
// concatenated, each level row-major (kernels/signature/README.md).
//
// One work-group per path; the signature is built in place in the path's output row, segment
// by segment (Chen's identity S <- S ⊗ exp(Δ)), levels from the top down with a barrier between
// levels (level k reads the lower levels, which must still hold their old values). Within a
// level the work-items share the terms; each term runs Horner's rule over its word's prefixes:
//   S^k[i1..ik] += ((Δ_i1/k + S^1[i1]) Δ_i2/(k-1) + S^2[i1 i2]) Δ_i3/(k-2) ... Δ_ik/1
// k multiply-adds per term and segment (the cpu kernel shares the prefixes' work instead; here
// that would need a scratch buffer per path, and the terms would wait for each other).
//
// Parameters (all #defines):
//   WG  work-items per group
typedef kf_storage T;  // fp32

// 1/m, correctly rounded by the compiler: OpenCL's float division may be off by 2.5 ulp, which
// the error bound does not allow for (it counts one rounding for the constant, one for its use).
__constant float kInv[7] = {0.0f, 1.0f, 0.5f, 0.333333333333f, 0.25f, 0.2f, 0.166666666667f};

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void signature(__global const T* X, __global T* SIG, int B, int L, int D, int LEVEL) {
  const int lid = get_local_id(0);
  const long b = get_group_id(0);
  long off[8], size[8];
  size[0] = 1, off[1] = 0;
  for (int k = 1; k <= LEVEL; ++k) size[k] = size[k - 1] * D, off[k + 1] = off[k] + size[k];
  const long siglen = off[LEVEL + 1];
  __global T* S = SIG + b * siglen;
  for (long e = lid; e < siglen; e += WG) S[e] = 0.0f;
  barrier(CLK_GLOBAL_MEM_FENCE);
  __global const T* x = X + b * L * D;
  for (int t = 0; t + 1 < L; ++t, x += D) {
    for (int k = LEVEL; k >= 1; --k) {
      for (long e = lid; e < size[k]; e += WG) {
        long pw = size[k - 1];  // D^(k-m): the word's first m letters are e / pw
        int i = (int)(e / pw);
        float acc = (x[D + i] - x[i]) * kInv[k];
        for (int m = 1; m < k; ++m) {
          const long prefix = e / pw;
          pw /= D;
          i = (int)((e / pw) % D);
          acc = (S[off[m] + prefix] + acc) * ((x[D + i] - x[i]) * kInv[k - m]);
        }
        S[off[k] + e] += acc;
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
  }
}
