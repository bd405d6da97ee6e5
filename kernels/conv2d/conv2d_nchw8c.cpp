// conv2d_nchw8c and conv2d_nchw8c_xplain for the cpu backend: direct convolution with the
// filters and y blocked by 8 (w OIhw8i8o or OIhw8o, y nChw8c) and x either blocked too (nChw8c,
// XB = 8) or plain NCHW (XB = 1, for C < 8: a network's first layer, an image filter); see
// conv2d_nchw8c_problem.cpp. Any R, S, stride, pad, dil.
// The vector runs over the 8 filters of a block, not along the output row (conv2d.cpp's NCHW
// plan): a micro-tile keeps OW output pixels x KB8 filter blocks in KB8*OW accumulators, and
// per reduction step (channel c, window tap (r, s)) it loads KB8 aligned 8-filter weight
// vectors, broadcasts OW input values (one per pixel) and issues KB8*OW FMAs. No load splits a
// cache line and no lane computes a discarded output. With XB = 8 a pixel's 8 channels of a
// block are adjacent, so the 8 steps of one (block, tap) read one 32-byte input vector per
// pixel and 8 consecutive weight vectors per filter block.
//
// A pool block owns PB output rows x KBB filter blocks of one image; grid
// (ceil_div(P, PB), ceil_div(K/8, KBB), N). The reduction runs in chunks of CBB channel blocks
// (of XB channels); between chunks the partial sums wait in y (fp32) or in an fp32 buffer
// (16-bit storage, where x and w are also converted to fp32 once per block). Rows outside the
// image are skipped. Columns, fp32 at stride 1: a tile whose pixels all read inside the image
// (the interior) forms its addresses from one base (pixel j at +8j, immediate offsets); any
// other tile gives each pixel its own pointer per tap, to a zero vector where the tap falls
// outside the image; a 1x1 at stride 1 without padding tiles the block's rows as one run of
// pixels. Stride > 1 (windows wider than 1x1) and 16-bit storage: the block first stages the
// input rows it reads, zero-padded and split by stride phase (plane ph of a row holds padded columns ph,
// ph + stride, ...), so tap s of output pixel q is at column q + (s*dil)/stride of plane
// (s*dil) % stride: every tile is then the interior one, at unit stride.
//
// Parameters (all #defines):
//   XB    channels per block of x: 8 (nChw8c) or 1 (plain NCHW); fixed by the problem's spec
//   OW    output pixels per micro-tile
//   KB8   filter blocks (of 8) per micro-tile: accumulators KB8 * OW vectors
//   KBB   filter blocks per pool block (a multiple of KB8)
//   PB    output rows per pool block
//   CBB   channel blocks per reduction chunk (>= C/XB: one chunk, no partial sums)
//   ORD   0: for each filter group, every pixel tile of the block's rows (the group's weights
//         of the chunk stay in L1); 1: for each pixel tile, every filter group (the tile's
//         input stays in L1)
// The vector width is the layout's 8 floats (one ymm register); on AVX-512 the same code runs
// on 256-bit registers (32 of them): a 16-wide kernel would want nChw16c and OIhw16i16o.
#include <immintrin.h>

#include <cstdlib>

#define VW 8
#include "kernels/common/simd.hpp"  // T, vf, scratch()
// Scratch slots: 0 fp32 input rows, 1 fp32 filters, 2 fp32 partial sums (16-bit storage only).

#if defined(KF_DTYPE_FP16) || defined(KF_DTYPE_BF16)
#define KF_SIXTEEN 1
#else
#define KF_SIXTEEN 0
#endif

alignas(32) static const float kZero8[8] = {};

// Where a micro-tile reads and writes. x at (channel block, row h) is xrow = xf + (cb*xrows +
// h - hlo)*xrowlen; on the interior path, tap s of output pixel q is at xrow + (q - pad + s*dil)*XB
// unstaged, xrow + (toff[s] + q)*XB staged (toff[s]: the phase plane's start plus the column in it);
// the filter block kb's taps of channel block cb are wf + (kb*CB + cb)*RS*XB*8; the partial
// sums of filter block kb, output row p (block-relative), pixel q at yf + kb*ykp + p*Q*8 + q*8.
struct View {
  const float* xf;
  const float* wf;
  float* yf;
  const int* toff;
  int W, CB, RS, S, xrows, hlo, Q;
  long long ykp, xrowlen;
  int Wi;  // a tile reading columns below this is interior: W, or no limit for a 1x1 run (flat)
};

// KF_ABLATE (not a spec parameter; 0, the default, compiles all of this away): phases taken out
// to measure what each costs (bench/kernel_phases, issue 25). The results are then wrong on
// purpose; fp32 only. Bits:
//   1  no partial-sum traffic: tiles start from zero and are stored to a per-thread scratch
//      tile in L1 instead of y (same store instructions)
//   2  L1 input: every tile reads the block's first pixels of channel block 0 (the same lines)
//   8  strided 1x1 staged: a 1x1 at stride > 1 takes the staged path (rows copied per block)
//  16  with 8: a thread stages its rows the first time (at these sizes) and never again
#ifndef KF_ABLATE
#define KF_ABLATE 0
#endif
#if KF_ABLATE && KF_SIXTEEN
#error "KF_ABLATE: fp32 only"
#endif

// One value broadcast to the 8 lanes: one load instruction (vbroadcastss), where `vf{} + v`
// costs an add and a shuffle.
static inline __attribute__((always_inline)) vf bcast(const float* p) {
#if defined(__AVX__)
  return (vf)_mm256_broadcast_ss(p);
#else
  const float v = *p;
  return vf{v, v, v, v, v, v, v, v};
#endif
}

// One (channel block, tap) step: XB channels, each KB8 weight vectors (held in registers) times
// NP broadcast input values; px(j) is pixel j's XB channels, wb[b] filter block b's XB x 8 taps.
template <int NP, class Px>
static inline __attribute__((always_inline)) void step8(vf acc[KB8][OW], Px px, const float* const* wb) {
#pragma GCC unroll 8
  for (int ci = 0; ci < XB; ++ci) {
    vf wv[KB8];
#pragma GCC unroll 8
    for (int b = 0; b < KB8; ++b) {
      wv[b] = *(const vf_unaligned*)(wb[b] + ci * 8);
      // Held in a register: left alone, GCC folds the load into each of the NP FMAs that use it.
      asm("" : "+x"(wv[b]));
    }
#pragma GCC unroll 8
    for (int j = 0; j < NP; ++j) {
      const vf xb = bcast(px(j) + ci);
#pragma GCC unroll 8
      for (int b = 0; b < KB8; ++b) acc[b][j] += xb * wv[b];
    }
  }
}

// The reduction of one micro-tile (NP pixels from q0, filter blocks kb + kmap[b]) over channel
// blocks cb0..cb1 and the window rows r0..r1 that fall inside the image (row r reads input row
// h0 + r*dil). MODE 0: interior, stride 1 (pixel j at a constant offset XB*j from one
// pointer); 2: staged rows, the same from the tap's phase-plane offset toff[s] (a mode of its
// own: the table load in MODE 0 cost 2-3% at 3x3 stride 1); 1: any other tile (a pointer per
// pixel and tap, to zeros outside the image).
template <int NP, int MODE>
static inline void reduce(const View& v, vf acc[KB8][OW], const int* kmap, int kb, int cb0,
                          int cb1, int h0, int r0, int r1, int q0, int stride, int pad, int dil) {
  const int S = v.S, W = v.W;
  const long long wks = (long long)v.CB * v.RS * XB * 8;  // one filter block to the next in w
  for (int cb = cb0; cb < cb1; ++cb)
    for (int r = r0; r < r1; ++r) {
      const long long xrowlen = MODE == 2 ? v.xrowlen : (long long)W * XB;  // unstaged: as before
#if KF_ABLATE & 2
      const float* xrow = v.xf;
      q0 = 0, (void)h0;
#else
      const float* xrow = v.xf + ((long long)cb * v.xrows + h0 + r * dil - v.hlo) * xrowlen;
#endif
      const float* wb[KB8];
#pragma GCC unroll 8
      for (int b = 0; b < KB8; ++b) wb[b] = v.wf + (kb + kmap[b]) * wks + ((long long)cb * v.RS + r * S) * XB * 8;
      for (int s = 0; s < S; ++s) {
        if constexpr (MODE == 0) {
          const float* x0 = xrow + (long long)(q0 - pad + s * dil) * XB;
          step8<NP>(acc, [&](int j) { return x0 + XB * j; }, wb);
        } else if constexpr (MODE == 2) {
          const float* x0 = xrow + (long long)(v.toff[s] + q0) * XB;
          step8<NP>(acc, [&](int j) { return x0 + XB * j; }, wb);
        } else {
          const int c0 = q0 * stride - pad + s * dil;  // pixel 0's input column
          const float* xp[NP];
#pragma GCC unroll 8
          for (int j = 0; j < NP; ++j) {
            const int col = c0 + j * stride;
            xp[j] = col >= 0 && col < W ? xrow + (long long)col * XB : kZero8;
          }
          step8<NP>(acc, [&](int j) { return xp[j]; }, wb);
        }
#pragma GCC unroll 8
        for (int b = 0; b < KB8; ++b) wb[b] += XB * 8;
      }
    }
}

// A micro-tile of NP pixels from q0 of block-relative output row pl, filter blocks kb.. of the
// pool block's kbb: load (or zero) the partial sums, reduce over the chunk, write them back.
template <int NP, bool STAGED>
static void tile(const View& v, int kb, int kbb, int pl, int cb0, int cb1, bool first, int h0,
                 int r0, int r1, int q0, int stride, int pad, int dil) {
  const int kuse = kbb - kb < KB8 ? kbb - kb : KB8;  // filter blocks stored
  // A short last group repeats its last filter block: computed, never stored.
  int kmap[KB8];
#pragma GCC unroll 8
  for (int b = 0; b < KB8; ++b) kmap[b] = b < kuse ? b : kuse - 1;
  float* yt = v.yf + (long long)kb * v.ykp + (long long)pl * v.Q * 8 + (long long)q0 * 8;
  vf acc[KB8][OW];
#pragma GCC unroll 8
  for (int b = 0; b < KB8; ++b)
#pragma GCC unroll 8
    for (int j = 0; j < NP; ++j)
      acc[b][j] = first || b >= kuse || (KF_ABLATE & 1) ? vf{} : *(const vf_unaligned*)(yt + b * v.ykp + j * 8);
#if KF_ABLATE & 1
  (void)yt;
  yt = (float*)scratch(4, 4ll * KB8 * OW * 8);
  const long long ykp = OW * 8;
#else
  const long long ykp = v.ykp;
#endif
  const int vlo = q0 * stride - pad, vhi = (q0 + NP - 1) * stride - pad + (v.S - 1) * dil;
  if constexpr (STAGED)
    reduce<NP, 2>(v, acc, kmap, kb, cb0, cb1, h0, r0, r1, q0, stride, pad, dil);
  else if (vlo >= 0 && vhi < v.Wi && stride == 1)
    reduce<NP, 0>(v, acc, kmap, kb, cb0, cb1, h0, r0, r1, q0, stride, pad, dil);
  else
    reduce<NP, 1>(v, acc, kmap, kb, cb0, cb1, h0, r0, r1, q0, stride, pad, dil);
#pragma GCC unroll 8
  for (int b = 0; b < KB8; ++b)
    if (b < kuse)
#pragma GCC unroll 8
      for (int j = 0; j < NP; ++j) *(vf_unaligned*)(yt + b * ykp + j * 8) = acc[b][j];
}

// A tile of np <= OW pixels: the instantiation with exactly that many.
template <bool STAGED>
static void tile_n(int np, const View& v, int kb, int kbb, int pl, int cb0, int cb1, bool first,
                   int h0, int r0, int r1, int q0, int stride, int pad, int dil) {
  switch (np) {
#define KF_TILE(n)                                                                               \
  case n:                                                                                        \
    tile<(n <= OW ? n : 1), STAGED>(v, kb, kbb, pl, cb0, cb1, first, h0, r0, r1, q0, stride, pad, dil); \
    return;
    KF_TILE(1) KF_TILE(2) KF_TILE(3) KF_TILE(4) KF_TILE(5) KF_TILE(6) KF_TILE(7) KF_TILE(8)
#undef KF_TILE
    default: std::abort();
  }
}

// One pool block; STAGED: x read from staged rows (stride > 1 with a window wider than 1x1,
// and all 16-bit storage). Two functions, not a flag: with the staged path inlined into the
// unstaged one, GCC's code for the stride-1 1x1 loop came out 3-8% slower.
template <bool STAGED>
__attribute__((noinline)) static void block_body(const kf_ctx& ctx, const T* x, const T* w, T* y, int C,
                                                 int H, int W, int K, int R, int S, int stride, int pad, int dil) {
  const int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
  const int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
  const int CB = C / XB, K8 = K / 8, RS = R * S;
  const int p0 = (int)ctx.block_idx.x * PB, kb0 = (int)ctx.block_idx.y * KBB, n = (int)ctx.block_idx.z;
  const int pb = P - p0 < PB ? P - p0 : PB, kbb = K8 - kb0 < KBB ? K8 - kb0 : KBB;
  const long long wblock = (long long)CB * RS * XB * 8;  // floats of one filter block in w
  View v;
  v.W = W, v.CB = CB, v.RS = RS, v.S = S, v.Q = Q;
  v.toff = nullptr;
  if constexpr (STAGED) {
    // Scratch slot 3: toff[S] (see View), then the staged-row flags.
    int* toff = (int*)scratch(3, 4ll * (S + H + 1));
    v.toff = toff;
    // The input rows this block reads (all channel blocks, fp32), zero-padded and split by
    // stride phase: row (cb, h) holds `stride` planes of jw columns of XB channels, plane ph
    // column i = input column i*stride + ph - pad. Only the phases and rows some tap reads are
    // filled (a 1x1/2 reads phase 0 of every other row).
    const int jw = Q + (S - 1) * dil / stride;
    for (int t = 0; t < S; ++t) toff[t] = (t * dil) % stride * jw + t * dil / stride;
    int hlo = p0 * stride - pad, hhi = (p0 + pb - 1) * stride - pad + (R - 1) * dil + 1;
    hlo = hlo < 0 ? 0 : hlo;
    hhi = hhi > H ? H : hhi;
    const int xrows = hhi > hlo ? hhi - hlo : 1;
    const long long xrowlen = (long long)stride * jw * XB;
    int* need = toff + S;  // need[h - hlo]: some output row of the block reads input row h
    for (int h = 0; h < xrows; ++h) need[h] = 0;
    for (int pl = 0; pl < pb; ++pl)
      for (int r = 0; r < R; ++r) {
        const int h = (p0 + pl) * stride - pad + r * dil;
        if (h >= 0 && h < H) need[h - hlo] = 1;
      }
    unsigned phases = 0;  // bit ph: some tap reads plane ph (stride <= 32 here; else all)
    for (int t = 0; t < S; ++t) phases |= stride > 32 ? ~0u : 1u << ((t * dil) % stride);
    float* xs = (float*)scratch(0, 4ll * CB * xrows * xrowlen);
#if KF_ABLATE & 16
    // Staged once per thread (the same address and size since): the copy left out.
    static thread_local const float* staged_at = nullptr;
    static thread_local long long staged_n = 0;
    const bool stage_now = xs != staged_at || CB * xrows * xrowlen != staged_n;
    staged_at = xs, staged_n = CB * xrows * xrowlen;
    if (stage_now)
#endif
    for (int cb = 0; cb < CB; ++cb)
      for (int h = hlo; h < hhi; ++h) {
        if (!need[h - hlo]) continue;
        const T* src = x + ((((long long)n * CB + cb) * H + h) * W) * XB;
        float* dst = xs + ((long long)cb * xrows + h - hlo) * xrowlen;
        for (int ph = 0; ph < stride; ++ph) {
          if (stride <= 32 && !(phases >> ph & 1u)) continue;
          float* d = dst + (long long)ph * jw * XB;
          for (int i = 0; i < jw; ++i) {
            const int col = i * stride + ph - pad;  // the input column, zero outside [0, W)
            if (col >= 0 && col < W)
              for (int e = 0; e < XB; ++e) d[i * XB + e] = to_f32(src[(long long)col * XB + e]);
            else
              for (int e = 0; e < XB; ++e) d[i * XB + e] = 0.f;
          }
        }
      }
    v.xf = xs, v.xrows = xrows, v.hlo = hlo, v.xrowlen = xrowlen;
  } else {
    v.xf = (const float*)x + (long long)n * CB * H * W * XB, v.xrows = H, v.hlo = 0, v.xrowlen = (long long)W * XB;
  }
#if KF_SIXTEEN
  // 16-bit storage: the block's filters converted to fp32 once; partial sums in an fp32 buffer
  // [kb][pl][q][8], rounded into y at the end.
  float* ws = (float*)scratch(1, 4ll * kbb * wblock);
  for (long long e = 0; e < kbb * wblock; ++e) ws[e] = to_f32(w[kb0 * wblock + e]);
  float* yb = (float*)scratch(2, 4ll * kbb * pb * Q * 8);
  v.wf = ws;
  v.yf = yb, v.ykp = (long long)pb * Q * 8;
#else
  v.wf = w + kb0 * wblock;
  v.yf = y + (((long long)n * K8 + kb0) * P + p0) * Q * 8, v.ykp = (long long)P * Q * 8;
#endif

  // A row in ceil(Q/OW) tiles of near-equal width (Q = 7 at OW = 6: 4 + 3, not 6 + 1): a
  // narrow tile has too few accumulators to hide the FMA latency (2 at 1 x 2: a chain).
  // 1x1 at stride 1 without padding: output pixel (p, q) reads input pixel (p, q), and W = Q,
  // so the block's pb rows are one run of pb*Q pixels in x and in y (fp32, staged or not): it
  // is tiled as one row, tiles crossing row ends (a 14-wide row was tiles of 5 + 5 + 4).
  const bool flat = R == 1 && S == 1 && stride == 1 && pad == 0;
  v.Wi = flat ? 0x7fffffff : W;
  const int rows = flat ? 1 : pb, rowpix = flat ? pb * Q : Q;
  const int ntile = (rowpix + OW - 1) / OW, wide = rowpix / ntile, nwider = rowpix % ntile;
  const auto tile_q0 = [&](int t) { return t * wide + (t < nwider ? t : nwider); };
  const auto tile_np = [&](int t) { return wide + (t < nwider ? 1 : 0); };
  for (int cb0 = 0; cb0 < CB; cb0 += CBB) {
    const int cb1 = CB - cb0 < CBB ? CB : cb0 + CBB;
    const bool first = cb0 == 0;
    const auto row = [&](int pl, int& h0, int& r0, int& r1) {
      // The window rows inside the image: h0 + r*dil in [0, H).
      h0 = (p0 + pl) * stride - pad;
      r0 = 0, r1 = R;
      while (r0 < R && h0 + r0 * dil < 0) ++r0;
      while (r1 > r0 && h0 + (r1 - 1) * dil >= H) --r1;
    };
    int h0, r0, r1;
    if (ORD == 0) {
      // A filter group's weights of the chunk (KB8*CBB*R*S*XB*8 floats) stay in L1 while every
      // pixel tile of the pool block's rows uses them.
      for (int kb = 0; kb < kbb; kb += KB8)
        for (int pl = 0; pl < rows; ++pl) {
          row(pl, h0, r0, r1);
          for (int t = 0; t < ntile; ++t)
            tile_n<STAGED>(tile_np(t), v, kb, kbb, pl, cb0, cb1, first, h0, r0, r1, tile_q0(t), stride, pad, dil);
        }
    } else {
      // A pixel tile's input of the chunk stays in L1 while every filter group uses it.
      for (int pl = 0; pl < rows; ++pl) {
        row(pl, h0, r0, r1);
        for (int t = 0; t < ntile; ++t)
          for (int kb = 0; kb < kbb; kb += KB8)
            tile_n<STAGED>(tile_np(t), v, kb, kbb, pl, cb0, cb1, first, h0, r0, r1, tile_q0(t), stride, pad, dil);
      }
    }
  }
#if KF_SIXTEEN
  for (int kb = 0; kb < kbb; ++kb)
    for (int pl = 0; pl < pb; ++pl) {
      T* dst = y + ((((long long)n * K8 + kb0 + kb) * P + p0 + pl) * Q) * 8;
      const float* src = yb + (long long)kb * v.ykp + (long long)pl * Q * 8;
      for (long long e = 0; e < (long long)Q * 8; ++e) dst[e] = from_f32(src[e]);
    }
#endif
}

static void conv2d_nchw8c_block(const kf_ctx& ctx, const T* x, const T* w, T* y, int N, int C,
                                int H, int W, int K, int R, int S, int stride, int pad, int dil) {
  (void)N;
  // Staged where the stride phases would break the interior path, and always for 16-bit
  // storage (converted once). Not a strided 1x1: each staged value would feed only the block's
  // KBB*8 filters, and the copy (x from L3, redone by every filter block of the pool) cost more
  // than the per-pixel pointers it saves (conv3_1 1x1/2: 1.1-1.8x slower at the defaults).
  if (KF_SIXTEEN || (stride > 1 && (R * S > 1 || (KF_ABLATE & 8))))
    block_body<true>(ctx, x, w, y, C, H, W, K, R, S, stride, pad, dil);
#if !KF_SIXTEEN
  else
    block_body<false>(ctx, x, w, y, C, H, W, K, R, S, stride, pad, dil);
#endif
}

KF_KERNEL(conv2d_nchw8c, conv2d_nchw8c_block)
