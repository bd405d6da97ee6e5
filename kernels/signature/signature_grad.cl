// signature_grad for the opencl backend: GX (B,L,D) = d <GS, signature(X)> / dX, the
// mathematics in grad_problem.cpp (the backward pass that recovers each prefix by exp(-Δ)
// instead of storing it).
//
// One work-group per path. Its five truncated tensors (with level 0, row-major words) live in
// the problem's workspace W (a scratch tensor: B rows of 5 (siglen + 1)): the prefix S, E =
// exp(Δ), the adjoint gS of the prefix after the segment, gA of the one before it, and gE of
// exp(Δ). Per segment, backwards, each step a parallel loop over terms with a barrier after it:
//   1. S <- S ⊗ exp(-Δ), levels top down, each term by Horner's rule over its word's prefixes
//      (as signature.cl; one barrier per level: level k reads the lower, still old, levels);
//      E^m[w] = Δ_w1 ... Δ_wm / m!, each term on its own;
//   2. the adjoints of C = A ⊗ E, each term of gA and of gE an independent sum (no atomics):
//      gA^j[u] = sum_(k>=j) sum_v gS^k[uv] E^(k-j)[v],  gE^m[v] = sum_(k>=m) sum_p gS^k[pv] S^(k-m)[p];
//   3. exp's adjoint, levels top down: gE^(m-1)[p] += (sum_i gE^m[p i] Δ_i) / m;
//   4. each channel's dΔ_i = sum_m sum_p gE^m[p i] E^(m-1)[p] / m by the work-item that owns
//      channel i, added to x_t and subtracted from x_(t-1) (always by that work-item: no race).
// gA becomes gS for the next segment. Low levels' adjoint terms are long sums (gA^1's term runs
// over siglen / D products) and the work-items holding them finish last: the load is uneven.
//
// Parameters (all #defines):
//   WG  work-items per group
typedef kf_storage T;  // fp32

// 1/m correctly rounded (OpenCL's float division may be off by 2.5 ulp; see signature.cl).
__constant float kInv[8] = {0.0f, 1.0f, 0.5f, 0.333333333333f, 0.25f, 0.2f, 0.166666666667f, 0.142857142857f};

// S <- S ⊗ exp(sign Δ), Δ = xp[D + i] - xp[i]; levels from the top down.
inline void mul_exp(__global T* S, __global const T* xp, float sign, const long* off, const long* size, int D,
                    int LEVEL, int lid) {
  for (int k = LEVEL; k >= 1; --k) {
    for (long e = lid; e < size[k]; e += WG) {
      long pw = size[k - 1];  // D^(k-m): the word's first m letters are e / pw
      int i = (int)(e / pw);
      float acc = sign * (xp[D + i] - xp[i]) * kInv[k];
      for (int m = 1; m < k; ++m) {
        const long prefix = e / pw;
        pw /= D;
        i = (int)((e / pw) % D);
        acc = (S[off[m] + prefix] + acc) * (sign * (xp[D + i] - xp[i]) * kInv[k - m]);
      }
      S[off[k] + e] += acc;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void signature_grad(__global const T* X, __global const T* GS, __global T* GX, __global T* W, int B, int L, int D,
                    int LEVEL) {
  const int lid = get_local_id(0);
  const long b = get_group_id(0);
  long off[9], size[9];  // level k at off[k], D^k words; off[LEVEL + 1] = siglen + 1
  off[0] = 0, size[0] = 1;
  for (int k = 1; k <= LEVEL + 1; ++k) off[k] = off[k - 1] + size[k - 1], size[k] = size[k - 1] * D;
  const long n = off[LEVEL + 1];
  __global T* S = W + b * 5 * n;
  __global T* E = S + n;
  __global T* gS = E + n;
  __global T* gA = gS + n;
  __global T* gE = gA + n;
  __global const T* x = X + b * L * D;
  __global T* gx = GX + b * L * D;

  for (long e = lid; e < n; e += WG) S[e] = e == 0 ? 1.0f : 0.0f, gS[e] = e == 0 ? 0.0f : GS[b * (n - 1) + e - 1];
  for (long e = lid; e < (long)L * D; e += WG) gx[e] = 0.0f;
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int t = 1; t < L; ++t) mul_exp(S, x + (long)(t - 1) * D, 1.0f, off, size, D, LEVEL, lid);

  for (int t = L - 1; t >= 1; --t) {
    __global const T* xp = x + (long)(t - 1) * D;
    mul_exp(S, xp, -1.0f, off, size, D, LEVEL, lid);  // the prefix before segment t
    for (int m = 0; m <= LEVEL; ++m)
      for (long w = lid; w < size[m]; w += WG) {
        float e = 1.0f;
        long pw = size[m];
        for (int j = 1; j <= m; ++j) {
          pw /= D;
          const int i = (int)((w / pw) % D);
          e *= (xp[D + i] - xp[i]) * kInv[j];
        }
        E[off[m] + w] = e;
      }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int j = 0; j <= LEVEL; ++j)
      for (long u = lid; u < size[j]; u += WG) {
        float ga = 0.0f, ge = 0.0f;
        for (int k = j; k <= LEVEL; ++k) {
          const long sv = size[k - j];
          __global const T* g = gS + off[k] + u * sv;
          __global const T* ev = E + off[k - j];
          for (long v = 0; v < sv; ++v) ga += g[v] * ev[v];
          if (j == 0) continue;  // exp's level 0 is the constant 1
          __global const T* a = S + off[k - j];
          for (long p = 0; p < sv; ++p) ge += gS[off[k] + p * size[j] + u] * a[p];
        }
        gA[off[j] + u] = ga;
        gE[off[j] + u] = ge;
      }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int m = LEVEL; m >= 2; --m) {
      for (long p = lid; p < size[m - 1]; p += WG) {
        float s = 0.0f;
        for (int i = 0; i < D; ++i) s += gE[off[m] + p * D + i] * (xp[D + i] - xp[i]);
        gE[off[m - 1] + p] += s * kInv[m];
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
    for (int i = lid; i < D; i += WG) {
      float gd = 0.0f;
      for (int m = 1; m <= LEVEL; ++m) {
        float s = 0.0f;
        for (long p = 0; p < size[m - 1]; ++p) s += gE[off[m] + p * D + i] * E[off[m - 1] + p];
        gd += s * kInv[m];
      }
      gx[(long)t * D + i] += gd;
      gx[(long)(t - 1) * D + i] -= gd;
    }
    __global T* swap = gS;
    gS = gA, gA = swap;
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}
