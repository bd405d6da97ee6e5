// attention for the cuda backend: fused RoPE + scaled dot-product attention with an online
// softmax (problem.cpp has the math), FlashAttention-style. A block owns BQ query rows of one
// (batch, head); each row belongs to TD neighbouring threads of a warp, thread t holding head
// dimensions t, t + TD, t + 2·TD, ... of the rotated query row and of the output accumulator in
// registers. Keys and values go by in tiles of BKV, loaded by the whole block into shared memory
// with RoPE applied on the way in; a score is a partial dot product per thread summed by warp
// shuffles over the row's TD threads. Each row keeps a running max and sum (online softmax), so
// no S x S score matrix exists anywhere. Scores are in log2 units (scale·log2(e) is folded into
// q), so exp2 replaces exp. Causal blocks stop after the tile holding their last row's diagonal.
//
// Parameters (all #defines):
//   BQ     query rows per block               TD     threads per row (a power of 2, <= 32)
//   BKV    keys per tile in shared memory     DMAX   the largest head size D this build accepts
// threads per block: BQ·TD; shared memory: 2·BKV·DMAX floats.
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16, KF_DTYPE_BF16 (16-bit storage); the arithmetic
// is fp32 throughout and O is rounded once to the storage type.
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define DT (DMAX / TD)  // head dimensions per thread
#define LOG2E 1.44269504088896340736f

extern "C" __global__ void __launch_bounds__(BQ * TD)
attention(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
          T* __restrict__ O, int B, int H, int HKV, int S, int D, float scale,
          float rope_base, float causal) {
  __shared__ float Ks[BKV][DMAX];  // rotated keys
  __shared__ float Vs[BKV][DMAX];
  __shared__ float theta[DMAX / 2];
  const int t = threadIdx.x, r = threadIdx.y, tid = r * TD + t;
  const int i0 = blockIdx.x * BQ, h = blockIdx.y, b = blockIdx.z;
  const int i = i0 + r, half = D / 2, g = h / (H / HKV);
  const bool is_causal = causal != 0.0f, row = i < S;
  const T* q = Q + ((long long)b * H + h) * S * D;
  const T* k = K + ((long long)b * HKV + g) * S * D;
  const T* v = V + ((long long)b * HKV + g) * S * D;
  T* o = O + ((long long)b * H + h) * S * D;

  for (int d = tid; d < half; d += BQ * TD) theta[d] = powf(rope_base, -(float)(2 * d) / (float)D);
  __syncthreads();

  float qr[DT], acc[DT];
  const float qscale = scale * LOG2E;
#pragma unroll
  for (int u = 0; u < DT; ++u) {
    const int d = t + u * TD;
    qr[u] = 0.0f;
    acc[u] = 0.0f;
    if (row && d < D) {
      const int dd = d < half ? d : d - half;
      float sn, c;
      sincosf((float)i * theta[dd], &sn, &c);
      const float a = kf_to_f32(q[(long long)i * D + d]);
      const float partner = kf_to_f32(q[(long long)i * D + (d < half ? d + half : d - half)]);
      qr[u] = (d < half ? a * c - partner * sn : a * c + partner * sn) * qscale;
    }
  }
  float m = KF_NEG_INF, l = 0.0f;

  const int last = is_causal ? min(S, i0 + BQ) : S;  // keys any row of the block sees
  const int mine = min(is_causal ? i + 1 : S, S);    // keys this row sees
  for (int j0 = 0; j0 < last; j0 += BKV) {
    for (int e = tid; e < BKV * half; e += BQ * TD) {
      const int jj = e / half, d = e % half, j = j0 + jj;
      float k0 = 0.0f, k1 = 0.0f, v0 = 0.0f, v1 = 0.0f;
      if (j < S) {
        float sn, c;
        sincosf((float)j * theta[d], &sn, &c);
        const float a = kf_to_f32(k[(long long)j * D + d]), a2 = kf_to_f32(k[(long long)j * D + d + half]);
        k0 = a * c - a2 * sn;
        k1 = a2 * c + a * sn;
        v0 = kf_to_f32(v[(long long)j * D + d]);
        v1 = kf_to_f32(v[(long long)j * D + d + half]);
      }
      Ks[jj][d] = k0;
      Ks[jj][d + half] = k1;
      Vs[jj][d] = v0;
      Vs[jj][d + half] = v1;
    }
    // Past D the tiles hold zeros, so the unrolled loops below need no bounds.
    for (int e = tid; e < BKV * (DMAX - D); e += BQ * TD) {
      Ks[e / (DMAX - D)][D + e % (DMAX - D)] = 0.0f;
      Vs[e / (DMAX - D)][D + e % (DMAX - D)] = 0.0f;
    }
    __syncthreads();
    // Every thread computes every score (no divergence around the shuffles); the masked ones
    // (past this row's last key) become -inf.
    const int seen = row ? min(BKV, mine - j0) : 0;
    float s[BKV];
    float mt = KF_NEG_INF;
#pragma unroll
    for (int jj = 0; jj < BKV; ++jj) {
      float dot = 0.0f;
#pragma unroll
      for (int u = 0; u < DT; ++u) dot = fmaf(qr[u], Ks[jj][t + u * TD], dot);
#pragma unroll
      for (int off = TD / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off, TD);
      s[jj] = jj < seen ? dot : KF_NEG_INF;
      mt = fmaxf(mt, s[jj]);
    }
    if (seen > 0) {
      const float m_new = fmaxf(m, mt);
      const float alpha = exp2f(m - m_new);  // 0 on the first tile (m = -inf)
      l *= alpha;
#pragma unroll
      for (int u = 0; u < DT; ++u) acc[u] *= alpha;
#pragma unroll
      for (int jj = 0; jj < BKV; ++jj) {
        const float p = exp2f(s[jj] - m_new);  // 0 where masked
        l += p;
#pragma unroll
        for (int u = 0; u < DT; ++u) acc[u] = fmaf(p, Vs[jj][t + u * TD], acc[u]);
      }
      m = m_new;
    }
    __syncthreads();
  }
  if (row) {
    const float inv = 1.0f / l;
#pragma unroll
    for (int u = 0; u < DT; ++u)
      if (t + u * TD < D) o[(long long)i * D + t + u * TD] = kf_from_f32(acc[u] * inv);
  }
}
