// attention for the cpu backend: fused RoPE + scaled dot-product attention with an online
// softmax (problem.cpp has the math). A block owns BQ query positions of one (batch, K/V head)
// for all G = H/HKV query heads that share that K/V head (grouped-query attention), so each key
// tile is rotated once for R = G·BQ query rows. Query rows live in the SIMD lanes: every step,
// the two products and the softmax, is vectorized across rows, and K and V stay row-major:
//   1. once per block: RoPE of the R query rows, times scale·log2(e) (scores then come out in
//      log2 units, so exp2 replaces exp), stored transposed in stripes of NR = NV·VW rows
//      (Qs[stripe][d][NR]); zeros past position S-1;
//   2. per key tile (BKV keys): RoPE of the keys, row-major (vectorized along d), and the V tile
//      copied beside it, its head dimensions padded to a multiple of MR; then per stripe:
//   3. scores Pᵀ[key][row] = K'·Q'ᵀ by a register-tiled micro-kernel: MR keys (broadcast) x NV
//      vectors of rows, over d;
//   4. the online softmax, vectorized across the stripe's rows: masked keys -inf, new running
//      max m, factor α = 2^(m_old - m), P = 2^(P - m) (vectorized exp2), running sum l;
//   5. Accᵀ[d][row] = α·Accᵀ + Vᵀ·P by a second micro-kernel: MR head dimensions (broadcast
//      from the V tile) x NV vectors of rows, over the tile's keys (α applied as it loads);
//   and at the end O = Acc / l, transposed back. A stripe's scores (BKV x NR) stay in L1 from
//   its product to its use. Causal blocks stop at their last row's diagonal, only the tiles
//   that cross it are masked, and the grid puts the heaviest query blocks first so the thread
//   pool ends balanced.
// cos/sin come from a per-thread table of S x D/2 values computed in double (it depends on
// S, D and rope_base only, and is kept while they stay the same: a rotary cache).
//
// Parameters (all #defines):
//   BQ    query positions per block (times G heads)     BKV   keys per tile
//   MR    keys (scores) and head dimensions (output) per micro-tile: the broadcast side
//   NV    SIMD vectors of query rows per micro-tile     VW    SIMD width in floats: 8 (AVX2),
//         16 (AVX-512), 0 = the widest the compiler targets
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

// 2^x for x <= 0, within 2 ulp; exactly 0 below -126.5 (masked keys are -inf); NaN stays NaN.
// Clamped at -127 first: there n = -127 puts a zero in the exponent field of 2^n, so the product
// is 0 with no compare and blend (KF_MAXPS(lo, x) is x where x is NaN).
static inline vf exp2v(vf x) {
  const vf xc = KF_MAXPS((vf){} - 127.0f, x);
  const vf t = xc + 12582912.0f;  // 1.5·2^23: the integer nearest xc lands in t's low bits
  const vf n = t - 12582912.0f;
  const vf f = xc - n;  // [-0.5, 0.5]
  // 2^f by a degree-6 polynomial fitted for relative error on [-0.5, 0.5] (below 2 ulp in fp32
  // with the rounding of Horner's steps), by Horner.
  vf p = f * 1.5345816791523248e-04f + 1.3399930903688073e-03f;
  p = p * f + 9.618489071726799e-03f;
  p = p * f + 5.550328642129898e-02f;
  p = p * f + 0.24022646248340607f;
  p = p * f + 0.6931471824645996f;
  p = p * f + 1.0f;
  const vi e = (__builtin_bit_cast(vi, t) - 0x4B400000 + 127) << 23;  // 2^n (0 for n = -127)
  return p * __builtin_bit_cast(vf, e);
}

// Pt[MR keys][NR rows] = Kr[MR keys][0:D] · Qs[0:D][NR rows]  (row strides D, NR, NR).
// mx[v] = max(mx[v], the first `valid` keys' scores): the tile's running max, free here.
static inline void micro_qk(int D, const float* __restrict kr, const float* __restrict qs,
                            float* __restrict pt, int valid, vf* __restrict mx) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[m][v] = (vf){};
#pragma GCC unroll 2
  for (int d = 0; d < D; ++d) {
    vf q[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) q[v] = *(const vf*)(qs + (long long)d * NR + v * VW);
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const float k = kr[(long long)m * D + d];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[m][v] += k * q[v];
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      *(vf*)(pt + m * NR + v * VW) = acc[m][v];
      if (m < valid) mx[v] = KF_MAXPS(acc[m][v], mx[v]);
    }
}

// Acc[MR dims][NR rows] = alpha · Acc + Vt[0:keys][MR dims]ᵀ · Pt[0:keys][NR rows]
// (row strides DP, NR, NR).
static inline void micro_pv(int keys, int DP, const float* __restrict pt, const float* __restrict vt,
                            const float* __restrict alpha, float* __restrict acc_io) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      acc[m][v] = *(const vf*)(acc_io + m * NR + v * VW) * *(const vf*)(alpha + v * VW);
#pragma GCC unroll 2
  for (int j = 0; j < keys; ++j) {
    vf p[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) p[v] = *(const vf*)(pt + (long long)j * NR + v * VW);
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const float x = vt[(long long)j * DP + m];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[m][v] += x * p[v];
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) *(vf*)(acc_io + m * NR + v * VW) = acc[m][v];
}

static void attention_block(const kf_ctx& ctx, const T* Q, const T* K, const T* V, T* O, int B,
                            int H, int HKV, int S, int D, float scale, float rope_base,
                            float causal_flag) {
  (void)B;
  const int g = (int)ctx.block_idx.x, b = (int)ctx.block_idx.y;
  const int i0 = (int)(ctx.grid_dim.z - 1 - ctx.block_idx.z) * BQ;  // heaviest blocks first
  const int rows = S - i0 < BQ ? S - i0 : BQ;            // query positions of this block
  const int G = H / HKV;                                 // query heads sharing K/V head g
  const int R = G * BQ;  // the block's rows: head g·G + r / BQ, position i0 + r % BQ
  const int RP = (R + NR - 1) / NR * NR;                 // rows padded to whole stripes
  const bool causal = causal_flag != 0.0f;
  const int half = D / 2;
  const int DP = (D + MR - 1) / MR * MR;  // head dimensions padded to whole micro-tiles
  const T* k = K + ((long long)b * HKV + g) * S * D;
  const T* v = V + ((long long)b * HKV + g) * S * D;
  const float* cosv = rope_table(S, D, rope_base);
  const float* sinv = cosv + (long long)S * half;

  float* Qs = scratch_floats(0, (long long)RP * D);     // (RP/NR, D, NR)
  float* Kr = scratch_floats(1, (long long)BKV * D);    // (BKV, D)
  float* Vt = scratch_floats(2, (long long)BKV * DP);   // (BKV, DP)
  float* Pt = scratch_floats(3, (long long)BKV * NR);   // (BKV, NR): one stripe's scores
  float* Acc = scratch_floats(4, (long long)RP * DP);   // (RP/NR, DP, NR)
  float* ml = scratch_floats(5, 3LL * RP);              // running max, sum, rescale factor (RP)
  int* pos = (int*)scratch(7, 4LL * RP);                // each row's position (masking)

  // 1. The query rows of the G heads: RoPE, times scale·log2(e), transposed into stripes;
  //    zeros past position S-1 and in the padding rows.
  const float qscale = scale * 1.44269504088896340736f;
  for (int r = 0; r < RP; ++r) {
    const int rr = r % BQ;
    const bool in = r < R && rr < rows;
    pos[r] = in ? i0 + rr : S;  // padding rows see every key (their zero scores stay finite)
    float* qt = Qs + (long long)(r / NR) * D * NR + r % NR;
    if (!in) {
      for (int d = 0; d < D; ++d) qt[(long long)d * NR] = 0.0f;
      continue;
    }
    const T* qi = Q + (((long long)b * H + g * G + r / BQ) * S + i0 + rr) * D;
    const float* c = cosv + (long long)(i0 + rr) * half;
    const float* s = sinv + (long long)(i0 + rr) * half;
    for (int d = 0; d < half; ++d) {
      const float a = to_f32(qi[d]), a2 = to_f32(qi[d + half]);
      qt[(long long)d * NR] = (a * c[d] - a2 * s[d]) * qscale;
      qt[(long long)(d + half) * NR] = (a2 * c[d] + a * s[d]) * qscale;
    }
  }
  for (long long e = 0; e < (long long)RP * DP; ++e) Acc[e] = 0.0f;
  for (int r = 0; r < RP; ++r) ml[r] = -INFINITY, ml[RP + r] = 0.0f;

  const int kv_end = causal ? i0 + rows : S;  // keys any row of this block sees
  for (int j0 = 0; j0 < kv_end; j0 += BKV) {
    const int cols = kv_end - j0 < BKV ? kv_end - j0 : BKV;
    const int cols_p = (cols + MR - 1) / MR * MR;  // keys the score micro-tiles cover
    // 2. The key tile, once for the G heads: RoPE, row-major; the value tile, head dimensions
    //    padded with zeros; zero keys up to the next micro-tile.
    for (int jj = 0; jj < cols_p; ++jj) {
      float* kr = Kr + (long long)jj * D;
      float* vt = Vt + (long long)jj * DP;
      if (jj >= cols) {
        for (int d = 0; d < D; ++d) kr[d] = 0.0f;
        for (int d = 0; d < DP; ++d) vt[d] = 0.0f;
        continue;
      }
      const T* kj = k + (long long)(j0 + jj) * D;
      const T* vj = v + (long long)(j0 + jj) * D;
      const float* c = cosv + (long long)(j0 + jj) * half;
      const float* s = sinv + (long long)(j0 + jj) * half;
      for (int d = 0; d < half; ++d) {
        const float a = to_f32(kj[d]), a2 = to_f32(kj[d + half]);
        kr[d] = a * c[d] - a2 * s[d];
        kr[d + half] = a2 * c[d] + a * s[d];
      }
      for (int d = 0; d < D; ++d) vt[d] = to_f32(vj[d]);
      for (int d = D; d < DP; ++d) vt[d] = 0.0f;
    }
    // Rows before position j0 + cols - 1 can be masked in this tile (causal only).
    const bool masked = causal && j0 + cols - 1 > i0;
    for (int r0 = 0; r0 < RP; r0 += NR) {
      // 3. Scores of this stripe.
      const float* qs = Qs + (long long)r0 * D;
      vf mx[NV];
      for (int vv = 0; vv < NV; ++vv) mx[vv] = (vf){} - INFINITY;
      for (int c0 = 0; c0 < cols_p; c0 += MR)
        micro_qk(D, Kr + (long long)c0 * D, qs, Pt + (long long)c0 * NR, cols - c0, mx);
      // 4. Online softmax across the stripe's rows.
      for (int vv = 0; vv < NV; ++vv) {
        const int rv = r0 + vv * VW;
        float* pc = Pt + vv * VW;
        vf mt = mx[vv];  // the unmasked tile's max, from the micro-kernel
        if (masked) {
          mt = (vf){} - INFINITY;
          const vi pv = *(const vi*)(pos + rv);
          for (int jj = 0; jj < cols; ++jj) {
            vf x = *(vf*)(pc + (long long)jj * NR);
            x = (vi){} + (j0 + jj) > pv ? (vf){} - INFINITY : x;
            *(vf*)(pc + (long long)jj * NR) = x;
            mt = KF_MAXPS(x, mt);
          }
        }
        const vf m_old = *(const vf*)(ml + rv);
        const vf m_new = KF_MAXPS(mt, m_old);  // finite: every row sees key 0 on tile 0
        const vf alpha = exp2v(m_old - m_new);     // 0 on the first tile (m_old = -inf)
        vf sum = (vf){};
        for (int jj = 0; jj < cols; ++jj) {
          const vf e = exp2v(*(vf*)(pc + (long long)jj * NR) - m_new);
          *(vf*)(pc + (long long)jj * NR) = e;
          sum += e;
        }
        *(vf*)(ml + rv) = m_new;
        *(vf*)(ml + RP + rv) = *(const vf*)(ml + RP + rv) * alpha + sum;
        *(vf*)(ml + 2 * RP + rv) = alpha;
      }
      // 5. Accᵀ = α·Accᵀ + Vᵀ·P for this stripe.
      float* acc = Acc + (long long)r0 * DP;
      for (int d0 = 0; d0 < DP; d0 += MR)
        micro_pv(cols, DP, Pt, Vt + d0, ml + 2 * RP + r0, acc + (long long)d0 * NR);
    }
  }
  for (int r = 0; r < R; ++r) {
    const int rr = r % BQ;
    if (rr >= rows) continue;
    const float inv = 1.0f / ml[RP + r];
    const float* ar = Acc + (long long)(r / NR) * DP * NR + r % NR;
    T* orow = O + (((long long)b * H + g * G + r / BQ) * S + i0 + rr) * D;
    for (int d = 0; d < D; ++d) orow[d] = from_f32(ar[(long long)d * NR] * inv);
  }
}

KF_KERNEL(attention, attention_block)
