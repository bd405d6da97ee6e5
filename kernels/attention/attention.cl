// attention for the opencl backend: fused RoPE + scaled dot-product attention with an online
// softmax (problem.cpp has the math), in the spirit of FlashAttention. A work-group owns BQ
// query rows of one (batch, head), one work-item per row; the keys go by in tiles of BKV that
// the work-group loads together into local memory, rotating K (RoPE) on the way in. The rotated,
// pre-scaled query rows and the output accumulators live in local memory too, stored
// dimension-major (one column per work-item: neighbouring work-items touch neighbouring words),
// and a work-item holds its tile of scores in registers; it updates a running max and sum per
// tile, so no S x S score matrix exists anywhere.
// Scores are in log2 units (scale·log2(e) is folded into q), so exp2 replaces exp. Causal
// work-groups stop after the tile holding their last row's diagonal.
//
// Parameters (all #defines):
//   BQ     query rows per work-group (= work-items)
//   BKV    keys per tile held in local memory (and scores per work-item in registers)
//   DMAX   the largest head size D this build accepts (sizes the local arrays)
// local memory: (2·BQ + 2·BKV)·DMAX floats.
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout and O is rounded once to the storage type.
#define LOG2E 1.44269504088896340736f

typedef kf_storage T;  // the dtype's storage type (the prelude's)

__kernel __attribute__((reqd_work_group_size(BQ, 1, 1)))
void attention(__global const T* Q, __global const T* K, __global const T* V, __global T* O,
               int B, int H, int HKV, int S, int D, float scale, float rope_base, float causal) {
  __local float Qs[DMAX * BQ];   // (DMAX, BQ): rotated, pre-scaled query rows, one column per row
  __local float Os[DMAX * BQ];   // (DMAX, BQ): output accumulators
  __local float Ks[BKV * DMAX];  // (BKV, DMAX): rotated keys
  __local float Vs[BKV * DMAX];  // (BKV, DMAX)
  __local float theta[DMAX / 2];
  const int r = get_local_id(0);
  const int i0 = get_group_id(0) * BQ, h = get_group_id(1), b = get_group_id(2);
  const int i = i0 + r, hd = D / 2, g = h / (H / HKV);
  const bool is_causal = causal != 0.0f, row = i < S;
  __global const T* q = Q + ((long)b * H + h) * S * D;
  __global const T* k = K + ((long)b * HKV + g) * S * D;
  __global const T* v = V + ((long)b * HKV + g) * S * D;
  __global T* o = O + ((long)b * H + h) * S * D;

  for (int d = r; d < hd; d += BQ) theta[d] = pow(rope_base, -(float)(2 * d) / (float)D);
  barrier(CLK_LOCAL_MEM_FENCE);

  const float qscale = scale * LOG2E;
  for (int d = 0; d < hd; ++d) {
    float c;
    const float sn = sincos((float)i * theta[d], &c);
    const float a = row ? kf_load(q + (long)i * D + d) : 0.0f;
    const float a2 = row ? kf_load(q + (long)i * D + d + hd) : 0.0f;
    Qs[d * BQ + r] = (a * c - a2 * sn) * qscale;
    Qs[(d + hd) * BQ + r] = (a2 * c + a * sn) * qscale;
  }
  for (int d = 0; d < D; ++d) Os[d * BQ + r] = 0.0f;
  float m = -INFINITY, l = 0.0f;

  const int last = is_causal ? min(S, i0 + BQ) : S;  // keys any row of the group sees
  const int mine = is_causal ? min(i + 1, S) : S;    // keys this row sees
  for (int j0 = 0; j0 < last; j0 += BKV) {
    for (int e = r; e < BKV * hd; e += BQ) {
      const int jj = e / hd, d = e % hd, j = j0 + jj;
      float k0 = 0.0f, k1 = 0.0f, v0 = 0.0f, v1 = 0.0f;
      if (j < S) {
        float c;
        const float sn = sincos((float)j * theta[d], &c);
        const float a = kf_load(k + (long)j * D + d), a2 = kf_load(k + (long)j * D + d + hd);
        k0 = a * c - a2 * sn;
        k1 = a2 * c + a * sn;
        v0 = kf_load(v + (long)j * D + d);
        v1 = kf_load(v + (long)j * D + d + hd);
      }
      Ks[jj * DMAX + d] = k0;
      Ks[jj * DMAX + d + hd] = k1;
      Vs[jj * DMAX + d] = v0;
      Vs[jj * DMAX + d + hd] = v1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // Scores of this row for the whole tile, in registers (s[] is indexed by unrolled loops
    // only); the keys this row does not see become -inf.
    const int seen = row ? min(BKV, mine - j0) : 0;
    if (seen > 0) {
      float s[BKV];
#pragma unroll
      for (int jj = 0; jj < BKV; ++jj) s[jj] = 0.0f;
      for (int d = 0; d < D; ++d) {
        const float qd = Qs[d * BQ + r];
#pragma unroll
        for (int jj = 0; jj < BKV; ++jj) s[jj] = fma(qd, Ks[jj * DMAX + d], s[jj]);
      }
      float mt = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < BKV; ++jj) {
        s[jj] = jj < seen ? s[jj] : -INFINITY;
        mt = fmax(mt, s[jj]);
      }
      const float m_new = fmax(m, mt);
      const float alpha = exp2(m - m_new);  // 0 on the first tile (m = -inf)
      float sum = 0.0f;
#pragma unroll
      for (int jj = 0; jj < BKV; ++jj) {
        s[jj] = exp2(s[jj] - m_new);  // 0 where masked
        sum += s[jj];
      }
      l = l * alpha + sum;
      m = m_new;
      for (int d = 0; d < D; ++d) {
        float a = Os[d * BQ + r] * alpha;
#pragma unroll
        for (int jj = 0; jj < BKV; ++jj) a = fma(s[jj], Vs[jj * DMAX + d], a);
        Os[d * BQ + r] = a;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row) {
    const float inv = 1.0f / l;
    for (int d = 0; d < D; ++d) kf_store(Os[d * BQ + r] * inv, o + (long)i * D + d);
  }
}
