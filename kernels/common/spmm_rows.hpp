// spmm.cpu's CSR kernel code (kernels/sparse/spmm.cpp: the design, with its measurements in
// kernels/sparse/README.md), shared with spmm_adaptive.cpp's CSR path so the two run one code:
// spmm_rows() computes rows [r0, r1) of C's column strip [n0, n0 + nc), C = A * B, A in CSR,
// by the 2-D tiles (KP > 0, where they pay) or the one-pass row loop with L2 panels.
//
// Needs the parameters NV, UN, PD, KP, KMIN, L2KB defined (spmm.cpu's meanings) and defines CW.
#ifndef KF_SPMM_ROWS_HPP
#define KF_SPMM_ROWS_HPP
#include "kernels/common/scratch.hpp"  // scratch(): the 2-D tile's converted block, per thread

#define CW (NV * KF_VW)

#include "kernels/common/equal_work_rows.hpp"  // first_row_at: equal-work row blocks

// W vectors of row [p0, p1) at column offset j of bcol (B + the strip's first column): UN
// nonzeros a step, each into its own accumulators.
template <int W>
static inline void row_tile(const int* col_idx, const float* values, const float* bcol, long long N, int p0,
                            int p1, int pend, float* c) {
  kf_vf acc[UN][W] = {};
  int p = p0;
  for (; p + UN <= p1; p += UN) {
#if PD > 0
    if (p + PD < pend) {
      const char* next = (const char*)(bcol + (long long)col_idx[p + PD] * N);
      for (int l = 0; l < W * KF_VW * 4; l += 64) __builtin_prefetch(next + l, 0, 3);
    }
#endif
    for (int u = 0; u < UN; ++u) {
      const kf_vf a = kf_splat(values[p + u]);
      const float* brow = bcol + (long long)col_idx[p + u] * N;
      for (int v = 0; v < W; ++v) acc[u][v] += a * kf_load(brow + v * KF_VW);
    }
  }
  for (; p < p1; ++p) {
    const kf_vf a = kf_splat(values[p]);
    const float* brow = bcol + (long long)col_idx[p] * N;
    for (int v = 0; v < W; ++v) acc[0][v] += a * kf_load(brow + v * KF_VW);
  }
  for (int u = 1; u < UN; ++u)
    for (int v = 0; v < W; ++v) acc[0][v] += acc[u][v];
  for (int v = 0; v < W; ++v) kf_store(c + v * KF_VW, acc[0][v]);
}

// Rows [r0, r1) of C's columns [n0, n0 + nc): tiles of CW, then single vectors, then floats.
static void rows_panel(const int* row_ptr, const int* col_idx, const float* values, const float* B, float* C,
                       int N, int r0, int r1, int n0, int nc) {
  const int pend = row_ptr[r1];
  for (int r = r0; r < r1; ++r) {
    const int p0 = row_ptr[r], p1 = row_ptr[r + 1];
    float* c = C + (long long)r * N + n0;
    const float* bcol = B + n0;
    int j = 0;
    for (; j + CW <= nc; j += CW) row_tile<NV>(col_idx, values, bcol + j, N, p0, p1, pend, c + j);
    // The tail in halving tiles (a single vector is one FMA chain, latency-bound).
    if (NV > 4 && j + 4 * KF_VW <= nc) row_tile<4>(col_idx, values, bcol + j, N, p0, p1, pend, c + j), j += 4 * KF_VW;
    if (NV > 2 && j + 2 * KF_VW <= nc) row_tile<2>(col_idx, values, bcol + j, N, p0, p1, pend, c + j), j += 2 * KF_VW;
    for (; j + KF_VW <= nc; j += KF_VW) row_tile<1>(col_idx, values, bcol + j, N, p0, p1, pend, c + j);
    for (; j < nc; ++j) {
      float acc = 0;
      for (int p = p0; p < p1; ++p) acc += values[p] * bcol[(long long)col_idx[p] * N + j];
      c[j] = acc;
    }
  }
}

// ---- 2-D tiles (KP > 0) ----

// W vectors of C's row at c, nonzeros [p0, p1) of the block (off: col * N, converted; val), each
// into UN accumulators; the first K range stores, the others add to C. Prefetch as row_tile, up
// to pend: the block's end with one range (rows follow each other in off), else the segment's.
template <int W>
static inline void seg_tile(const int* off, const float* val, const float* bcol, int p0, int p1, int pend,
                            float* c, bool first) {
  kf_vf acc[UN][W] = {};
  if (!first)
    for (int v = 0; v < W; ++v) acc[0][v] = kf_load(c + v * KF_VW);
  int p = p0;
  for (; p + UN <= p1; p += UN) {
#if PD > 0
    if (p + PD < pend) {
      const char* next = (const char*)(bcol + off[p + PD]);
      for (int l = 0; l < W * KF_VW * 4; l += 64) __builtin_prefetch(next + l, 0, 3);
    }
#endif
    for (int u = 0; u < UN; ++u) {
      const kf_vf a = kf_splat(val[p + u]);
      const float* brow = bcol + off[p + u];
      for (int v = 0; v < W; ++v) acc[u][v] += a * kf_load(brow + v * KF_VW);
    }
  }
  for (; p < p1; ++p) {
    const kf_vf a = kf_splat(val[p]);
    const float* brow = bcol + off[p];
    for (int v = 0; v < W; ++v) acc[0][v] += a * kf_load(brow + v * KF_VW);
  }
  for (int u = 1; u < UN; ++u)
    for (int v = 0; v < W; ++v) acc[0][v] += acc[u][v];
  for (int v = 0; v < W; ++v) kf_store(c + v * KF_VW, acc[0][v]);
}

// Columns [j, j + W * KF_VW) of the strip (bcol, c0: B's and C's column n0 + j) for the block's
// R rows, K range by K range; cut[i * (nq + 1) + q] is row i's first nonzero in range q.
template <int W>
static inline void tile_ranges(const int* off, const float* val, const int* cut, int R, int nq, const float* bcol,
                               float* c0, int N) {
  const int pend = cut[(long long)R * (nq + 1) - 1];  // the block's last nonzero + 1
  for (int q = 0; q < nq; ++q)
    for (int i = 0; i < R; ++i) {
      const int* ci = cut + (long long)i * (nq + 1);
      if (q > 0 && ci[q] == ci[q + 1]) continue;  // nothing of this row in the range: C holds its sum
      seg_tile<W>(off, val, bcol, ci[q], ci[q + 1], nq == 1 ? pend : ci[q + 1], c0 + (long long)i * N, q == 0);
    }
}

// Rows [r0, r1) of C's columns [n0, n0 + nc) in nq K ranges of KR rows of B. Once per block: each
// nonzero's column becomes an int offset col * N (scratch slot 0, the block's nonzeros in CSR
// order; values are read in place), and each row is cut where its columns cross a range (binary
// search; slot 1). A row whose columns do not ascend (the problem allows any order) is still cut
// into a partition of its nonzeros, each summed once: correct, only without the reuse.
static void block_2d(const int* row_ptr, const int* col_idx, const float* values, const float* B, float* C,
                     int N, int r0, int r1, int n0, int nc, int KR, int nq) {
  const int R = r1 - r0, P0 = row_ptr[r0], P = row_ptr[r1] - P0;
  int* off0 = (int*)scratch(0, 4LL * (P > 0 ? P : 1));
  int* cut = (int*)scratch(1, 4LL * R * (nq + 1));
  const int* off = off0 - P0;  // indexed by the nonzero's position in A
  const float* val = values;
  for (int i = 0; i < R; ++i) {
    const int p0 = row_ptr[r0 + i], p1 = row_ptr[r0 + i + 1];
    for (int p = p0; p < p1; ++p) off0[p - P0] = col_idx[p] * N;
    int* ci = cut + (long long)i * (nq + 1);
    ci[0] = p0;
    ci[nq] = p1;
    for (int q = 1; q < nq; ++q) {
      // The first nonzero of the row at or past column q * KR, searched from the previous cut:
      // the cuts never decrease and end at p1, so they partition the row whatever its order.
      const float edge = (float)((long long)q * KR);
      int lo = ci[q - 1], hi = p1;
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (col_idx[mid] < edge) lo = mid + 1;
        else hi = mid;
      }
      ci[q] = lo;
    }
  }
  float* c0 = C + (long long)r0 * N + n0;
  const float* bcol = B + n0;
  int j = 0;
  for (; j + CW <= nc; j += CW) tile_ranges<NV>(off, val, cut, R, nq, bcol + j, c0 + j, N);
  if (NV > 4 && j + 4 * KF_VW <= nc) tile_ranges<4>(off, val, cut, R, nq, bcol + j, c0 + j, N), j += 4 * KF_VW;
  if (NV > 2 && j + 2 * KF_VW <= nc) tile_ranges<2>(off, val, cut, R, nq, bcol + j, c0 + j, N), j += 2 * KF_VW;
  for (; j + KF_VW <= nc; j += KF_VW) tile_ranges<1>(off, val, cut, R, nq, bcol + j, c0 + j, N);
  // The last columns one float at a time, each row's nonzeros in order.
  for (; j < nc; ++j)
    for (int i = 0; i < R; ++i) {
      float acc = 0;
      for (int p = row_ptr[r0 + i]; p < row_ptr[r0 + i + 1]; ++p) acc += val[p] * bcol[off[p] + j];
      c0[(long long)i * N + j] = acc;
    }
}

// Rows [r0, r1) of C's columns [n0, n0 + nc): the 2-D tiles or the one-pass path, as above.
static void spmm_rows(const int* row_ptr, const int* col_idx, const float* values, const float* B, float* C,
                      int K, int N, int r0, int r1, int n0, int nc) {
#if KP > 0
  // 2-D tiles where B's rows fit int offsets: KR rows of B a range, each row's CW floats within
  // KP KiB. K of one range (the tile's panel of B fits KP): tile by tile over the block's rows,
  // indices converted once. Several ranges: only where the block uses a B row KMIN / 8 times on
  // average; a sparser block takes the one-pass path below (its tiles of one row follow each
  // other, which measured faster than a panel that does not fit L2).
  if ((long long)K * N < (1LL << 31) && r1 > r0) {
    int KR = (int)((long long)KP * 1024 / (4LL * CW));  // rows of B a range
    if (KR < 1) KR = 1;
    const int nq = K > 0 ? (K + KR - 1) / KR : 1;
    const double uses = ((double)row_ptr[r1] - row_ptr[r0]) / (K > 0 ? K : 1);  // mean uses of a B row
    if (nq == 1 || 8.0 * uses >= KMIN) {
      block_2d(row_ptr, col_idx, values, B, C, N, r0, r1, n0, nc, KR, nq);
      return;
    }
  }
#endif
  // The panel: as many whole tiles as K rows of B keep within L2KB, at least one.
  int pw = nc;
  if (L2KB > 0) {
    const long long fit = (long long)L2KB * 1024 / (4LL * (K > 0 ? K : 1));
    pw = (int)(fit / CW) * CW;
    if (pw < CW) pw = CW;
  }
  for (int j = 0; j < nc; j += pw)
    rows_panel(row_ptr, col_idx, values, B, C, N, r0, r1, n0 + j, nc - j < pw ? nc - j : pw);
}
#endif
