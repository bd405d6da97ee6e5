// attention for the cpu backend: fused RoPE + scaled dot-product attention with an online
// softmax (problem.cpp has the math). A block owns BQ query positions of one (batch, K/V head)
// for all G = H/HKV query heads that share that K/V head (grouped-query attention), so each key
// tile is rotated and transposed once for G·BQ query rows. It walks the keys in tiles of BKV,
// never holding more than a G·BQ x BKV tile of scores:
//   1. once per block: RoPE of the G·BQ query rows, times scale·log2(e) (scores then come out in
//      log2 units, so exp2 replaces exp), packed into MR-row panels;
//   2. per key tile: RoPE of the tile's keys, stored transposed (Kt: d-major) so that a SIMD
//      vector holds consecutive keys; the V tile copied beside it; zeros past the last key;
//   3. scores P = Qblock · Ktᵀ by a register-tiled micro-kernel (MR rows x NV vectors of keys);
//   4. per row, the online softmax: new running max m, factor 2^(m_old - m), P = 2^(P - m)
//      (vectorized exp2, masked keys give exact zeros), running sum l, accumulator rescaled;
//   5. Acc += P · Vtile by a second micro-kernel (MR rows x NV vectors of head dimensions);
//   and at the end O = Acc / l. Causal blocks stop at their last row's diagonal, and the
//   grid puts the heaviest query blocks first so the thread pool ends balanced.
// cos/sin come from a per-thread table of S x D/2 values computed in double (it depends on
// S, D and rope_base only, and is kept while they stay the same: a rotary cache).
//
// Parameters (all #defines):
//   BQ    query positions per block (times G heads)     BKV   keys per tile
//   MR    rows of both micro-tiles        NV    SIMD vectors per micro-tile row
//   VW    SIMD width in floats: 8 (AVX2), 16 (AVX-512), 0 = the widest the compiler targets
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16, KF_DTYPE_BF16 (16-bit storage); the arithmetic is
// fp32 throughout and O is rounded once to the storage type.
#include <cmath>
#include <cstdlib>

#include "kernels/common/simd.hpp"  // VW, T, vf, scratch()

#define NR (NV * VW)

typedef int vi __attribute__((vector_size(VW * 4)));

// cos(pos·θ_d) at [pos*half + d] and sin at [S*half + pos*half + d], θ_d = base^(-2d/D).
static const float* rope_table(int S, int D, float base) {
  static thread_local int ts = 0, td = 0;
  static thread_local float tb = 0;
  const int half = D / 2;
  float* t = scratch_floats(6, 2LL * S * half);
  if (ts == S && td == D && tb == base) return t;
  for (int d = 0; d < half; ++d) {
    const double theta = std::pow((double)base, -2.0 * d / D);
    for (int pos = 0; pos < S; ++pos) {
      t[(long long)pos * half + d] = (float)std::cos(pos * theta);
      t[(long long)S * half + (long long)pos * half + d] = (float)std::sin(pos * theta);
    }
  }
  ts = S, td = D, tb = base;
  return t;
}

// 2^x for x <= 0, within 2 ulp; 0 below -126 (masked keys are -inf).
static inline vf exp2v(vf x) {
  const vf xc = x < -126.0f ? (vf){} - 126.0f : x;
  const vf t = xc + 12582912.0f;  // 1.5·2^23: the integer nearest xc lands in t's low bits
  const vf n = t - 12582912.0f;
  const vf f = xc - n;  // [-0.5, 0.5]
  // Taylor series of 2^f to degree 7 (truncation 0.1 ulp), by Horner.
  vf p = f * 1.5252733804059838e-05f + 0.00015403530393381606f;
  p = p * f + 0.0013333558146428441f;
  p = p * f + 0.009618129107628477f;
  p = p * f + 0.055504108664821576f;
  p = p * f + 0.2402265069591007f;
  p = p * f + 0.6931471805599453f;
  p = p * f + 1.0f;
  const vi e = (__builtin_bit_cast(vi, t) - 0x4B400000 + 127) << 23;  // 2^n
  const vf r = p * __builtin_bit_cast(vf, e);
  return x < -126.0f ? (vf){} : r;
}

// P[MR rows][NR keys] = Qp panel (D x MR) · Kt[:, NR keys]  (Kt row stride BKV).
static inline void micro_qk(int D, const float* __restrict qp, const float* __restrict kt,
                            float* __restrict p) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = (vf){};
#pragma GCC unroll 4
  for (int d = 0; d < D; ++d) {
    vf kv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) kv[v] = *(const vf*)(kt + (long long)d * BKV + v * VW);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const float q = qp[d * MR + r];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] += q * kv[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) *(vf*)(p + r * BKV + v * VW) = acc[r][v];
}

// Acc[MR rows][NR dims] += P[MR rows][0:keys] · Vt[0:keys][NR dims]  (row strides BKV, DP).
static inline void micro_pv(int keys, int DP, const float* __restrict p, const float* __restrict vt,
                            float* __restrict acc_out) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = *(const vf*)(acc_out + (long long)r * DP + v * VW);
#pragma GCC unroll 4
  for (int j = 0; j < keys; ++j) {
    vf vv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) vv[v] = *(const vf*)(vt + (long long)j * DP + v * VW);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const float pj = p[r * BKV + j];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] += pj * vv[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) *(vf*)(acc_out + (long long)r * DP + v * VW) = acc[r][v];
}

static void attention_block(const kf_ctx& ctx, const T* Q, const T* K, const T* V, T* O, int B,
                            int H, int HKV, int S, int D, float scale, float rope_base,
                            float causal_flag) {
  (void)B;
  const int g = (int)ctx.block_idx.x, b = (int)ctx.block_idx.y;
  const int i0 = (int)(ctx.grid_dim.z - 1 - ctx.block_idx.z) * BQ;  // heaviest blocks first
  const int rows = S - i0 < BQ ? S - i0 : BQ;            // query positions of this block
  const int rows_p = (rows + MR - 1) / MR * MR;
  const int G = H / HKV;                                 // query heads sharing K/V head g
  const int R = G * rows_p;  // the block's rows: head g·G + r / rows_p, position i0 + r % rows_p
  const bool causal = causal_flag != 0.0f;
  const int half = D / 2;
  const int DP = (D + NR - 1) / NR * NR;  // head dimensions padded to whole micro-tiles
  const T* k = K + ((long long)b * HKV + g) * S * D;
  const T* v = V + ((long long)b * HKV + g) * S * D;
  const float* cosv = rope_table(S, D, rope_base);
  const float* sinv = cosv + (long long)S * half;

  float* Qp = scratch_floats(0, (long long)R * D);     // (R/MR, D, MR)
  float* Kt = scratch_floats(1, (long long)D * BKV);   // (D, BKV)
  float* Vt = scratch_floats(2, (long long)BKV * DP);  // (BKV, DP)
  float* P = scratch_floats(3, (long long)R * BKV);    // (R, BKV)
  float* Acc = scratch_floats(4, (long long)R * DP);   // (R, DP)
  float* ml = scratch_floats(5, 2LL * R);              // running max (R), running sum (R)

  // 1. The query rows of the G heads: RoPE, times scale·log2(e), in MR-row panels (rows_p is a
  //    multiple of MR, so no panel straddles two heads); zeros past position S-1.
  const float qscale = scale * 1.44269504088896340736f;
  for (int r = 0; r < R; ++r) {
    const int rr = r % rows_p;
    const bool in = rr < rows;
    float* panel = Qp + (long long)(r / MR) * D * MR + r % MR;
    const T* qi = Q + (((long long)b * H + g * G + r / rows_p) * S + i0 + rr) * D;
    const float* c = cosv + (long long)(i0 + rr) * half;
    const float* s = sinv + (long long)(i0 + rr) * half;
    for (int d = 0; d < half; ++d) {
      const float a = in ? to_f32(qi[d]) : 0.0f, a2 = in ? to_f32(qi[d + half]) : 0.0f;
      panel[d * MR] = in ? (a * c[d] - a2 * s[d]) * qscale : 0.0f;
      panel[(d + half) * MR] = in ? (a2 * c[d] + a * s[d]) * qscale : 0.0f;
    }
  }
  for (long long e = 0; e < (long long)R * DP; ++e) Acc[e] = 0.0f;
  for (int r = 0; r < R; ++r) ml[r] = -INFINITY, ml[R + r] = 0.0f;

  const int kv_end = causal ? i0 + rows : S;  // keys any row of this block sees
  for (int j0 = 0; j0 < kv_end; j0 += BKV) {
    const int cols = kv_end - j0 < BKV ? kv_end - j0 : BKV;
    // 2. The key tile, once for the G heads: RoPE, transposed; the value tile; zeros past the
    //    last key.
    for (int jj = 0; jj < BKV; ++jj) {
      const bool in = jj < cols;
      const T* kj = k + (long long)(j0 + jj) * D;
      const T* vj = v + (long long)(j0 + jj) * D;
      const float* c = cosv + (long long)(j0 + jj) * half;
      const float* s = sinv + (long long)(j0 + jj) * half;
      for (int d = 0; d < half; ++d) {
        const float a = in ? to_f32(kj[d]) : 0.0f, a2 = in ? to_f32(kj[d + half]) : 0.0f;
        Kt[(long long)d * BKV + jj] = in ? a * c[d] - a2 * s[d] : 0.0f;
        Kt[(long long)(d + half) * BKV + jj] = in ? a2 * c[d] + a * s[d] : 0.0f;
      }
      float* vt = Vt + (long long)jj * DP;
      for (int d = 0; d < DP; ++d) vt[d] = in && d < D ? to_f32(vj[d]) : 0.0f;
    }
    // 3. Scores.
    for (int r0 = 0; r0 < R; r0 += MR)
      for (int c0 = 0; c0 < BKV; c0 += NR)
        micro_qk(D, Qp + (long long)r0 * D, Kt + c0, P + (long long)r0 * BKV + c0);
    // 4. Online softmax, row by row.
    for (int r = 0; r < R; ++r) {
      float* pr = P + (long long)r * BKV;
      const int rr = r % rows_p;
      // Keys jj < seen are visible to this row; the others (past S, or after the diagonal) are masked.
      int seen = rr >= rows ? 0 : causal && i0 + rr - j0 + 1 < cols ? i0 + rr - j0 + 1 : cols;
      if (seen < 0) seen = 0;
      for (int jj = seen; jj < BKV; ++jj) pr[jj] = -INFINITY;
      if (seen == 0) {
        for (int jj = 0; jj < BKV; ++jj) pr[jj] = 0.0f;
        continue;
      }
      float mt = pr[0];
      for (int jj = 1; jj < seen; ++jj) mt = pr[jj] > mt ? pr[jj] : mt;
      const float m_old = ml[r], m_new = m_old > mt ? m_old : mt;
      const float alpha = std::exp2(m_old - m_new);  // 0 on the first tile (m_old = -inf)
      vf sum = (vf){};
      for (int c0 = 0; c0 < BKV; c0 += VW) {
        const vf e = exp2v(*(vf*)(pr + c0) - m_new);
        *(vf*)(pr + c0) = e;
        sum += e;
      }
      float l = 0.0f;
      for (int e = 0; e < VW; ++e) l += sum[e];
      ml[r] = m_new;
      ml[R + r] = ml[R + r] * alpha + l;
      if (alpha != 1.0f) {
        float* ar = Acc + (long long)r * DP;
        for (int d = 0; d < DP; ++d) ar[d] *= alpha;
      }
    }
    // 5. Acc += P · V.
    for (int r0 = 0; r0 < R; r0 += MR)
      for (int c0 = 0; c0 < DP; c0 += NR)
        micro_pv(cols, DP, P + (long long)r0 * BKV, Vt + c0, Acc + (long long)r0 * DP + c0);
  }
  for (int r = 0; r < R; ++r) {
    const int rr = r % rows_p;
    if (rr >= rows) continue;
    const float inv = 1.0f / ml[R + r];
    const float* ar = Acc + (long long)r * DP;
    T* orow = O + (((long long)b * H + g * G + r / rows_p) * S + i0 + rr) * D;
    for (int d = 0; d < D; ++d) orow[d] = from_f32(ar[d] * inv);
  }
}

KF_KERNEL(attention, attention_block)
