// gnn_aggregate for the cpu backend, density-adaptive: the path for each tile of RT rows chosen
// from the tile's own subgraph, measured from the pattern at run time (gnn_problem.hpp has the
// definition; kernels/sparse/README.md the measurement and where each choice loses):
//
//   long rows, COO edge-parallel: a row holding at least LONG_PERMILLE / 1000 of all edges (a
//     power-law hub) is not left to its tile's block: the long rows' edges, concatenated, are
//     cut into SPLITS equal ranges, one per extra block of the grid, so a hub is shared by several
//     blocks. A row cut across blocks is summed piecewise: each piece into its block's slot, and
//     the block that finishes a row's last piece (an atomic count) adds the pieces in block order
//     and writes the row. No block waits for another's turn (only, briefly, for the running block
//     that lists the long rows, once per launch), so any schedule works; the sum's order is
//     fixed, so the result is the same every run. Where no row is long the splitters return at
//     once after one vector pass over row_ptr.
//   dense block (GCN; the mean too with DENSE_KINDS 1): the tile's other rows and the union U of their columns form an rows x U
//     subgraph; where its density nnz / (rows · U) is at least DENSE_PERMILLE / 1000 (rows that
//     share neighbours: communities, block-sparse graphs), the weights go into a zeroed U x RT
//     tile and each H row of the union is loaded once for all RT rows (RT x NV accumulators),
//     instead of once per edge.
//   CSR row-split (otherwise): gnn_aggregate.cpu's row loop, one H row per edge.
//
// The zeros the dense block adds are exact (0 · h + s == s for finite h), and a piece's partial
// sum is a regrouping of the row's terms, so each output still carries only its row's terms'
// rounding: the problem's per-row bound holds on every path.
//
// Grid: (ceil(N / BN) column strips) x (min(ceil(M / RT), RBLOCKS) blocks of whole row tiles, of
// equal work by the cost prefix row_ptr[r] + r as gnn_aggregate.cpu's, + SPLITS splitter blocks).
// Where no tile is measured (the mean at DENSE_KINDS 0, or DENSE_PERMILLE 1001) a block is
// gnn_aggregate.cpu's block exactly (its row bounds, its row loop), less the long rows: the
// tiles' scaffolding cost the mean 5-20% (loaded host) for nothing.
// Parameters (#defines): BN columns per strip, NV vectors per register tile, VW floats per
// vector (0: widest), RT rows per tile, RBLOCKS blocks of tiles, DENSE_PERMILLE the dense block's threshold (0: always,
// 1001: never), DENSE_KINDS 0: the dense block for GCN only (measured: it never paid for the
// mean), 1: for both kinds, SPLITS splitter blocks (0: no row is long), LONG_PERMILLE a long row's share of
// all edges in 1/1000 (0 with SPLITS > 0: every row with an edge is edge-parallel).
#include <atomic>
#include <mutex>
#include <vector>

#include "kernels/common/gnn_rows.hpp"  // gnn_weight, gnn_edges: the CSR path and a piece's sum
#include "kernels/common/scratch.hpp"   // scratch_floats: the dense block's weight tile

// A row is long when len * 1000 >= edges * LONG_PERMILLE and len > 0: as a whole number of edges,
// len >= ceil(edges * LONG_PERMILLE / 1000), at least 1, so the test per row is one integer
// compare (the scan for long rows vectorizes). No row is long with SPLITS 0.
static inline int long_threshold(const int* row_ptr, int M) {
  const double t = __builtin_ceil((double)row_ptr[M] * LONG_PERMILLE / 1000.0);
  return SPLITS > 0 ? (int)(t < 1.0 ? 1.0 : t) : 0x7fffffff;
}
static inline bool is_long(const int* row_ptr, int r, int threshold) {
  return SPLITS > 0 && row_ptr[r + 1] - row_ptr[r] >= threshold;
}

// ---- the dense block ---------------------------------------------------------------------------
// out rows r0 + i (i < nr, not long) = self term + Σ_u w[u·RT + i] · H[cols[u], strip].
static void dense_tile(bool gcn, const int* row_ptr, const float* H, float* out, int N, int r0, int nr,
                       const bool* skip, const int* cols, int U, const float* w, int n0, int nc) {
  float wself[RT] = {};
  for (int i = 0; i < nr; ++i) wself[i] = 1.0f / (1.0f + (row_ptr[r0 + i + 1] - row_ptr[r0 + i]));
  const float* hcol = H + n0;
  int j = 0;
  for (; j + CW <= nc; j += CW) {
    kf_vf acc[RT][NV] = {};
    if (gcn)
      for (int i = 0; i < nr; ++i)
        if (!skip[i])
          for (int v = 0; v < NV; ++v) acc[i][v] = kf_splat(wself[i]) * kf_load(hcol + (long long)(r0 + i) * N + j + v * KF_VW);
    for (int u = 0; u < U; ++u) {
      kf_vf h[NV];
      for (int v = 0; v < NV; ++v) h[v] = kf_load(hcol + (long long)cols[u] * N + j + v * KF_VW);
      for (int i = 0; i < RT; ++i) {
        const kf_vf s = kf_splat(w[(long long)u * RT + i]);
        for (int v = 0; v < NV; ++v) acc[i][v] += s * h[v];
      }
    }
    for (int i = 0; i < nr; ++i)
      if (!skip[i])
        for (int v = 0; v < NV; ++v) kf_store(out + (long long)(r0 + i) * N + n0 + j + v * KF_VW, acc[i][v]);
  }
  for (; j < nc; ++j)  // tail columns: one float at a time
    for (int i = 0; i < nr; ++i) {
      if (skip[i]) continue;
      float acc = gcn ? wself[i] * hcol[(long long)(r0 + i) * N + j] : 0.0f;
      for (int u = 0; u < U; ++u) acc += w[(long long)u * RT + i] * hcol[(long long)cols[u] * N + j];
      out[(long long)(r0 + i) * N + n0 + j] = acc;
    }
}

// The union is measured only where the dense block may be chosen: for GCN (its weights cost a
// sqrt and a division per edge and column chunk on the CSR path, once per tile on the dense one)
// or for both kinds with DENSE_KINDS 1; the mean's CSR path is cheaper than the union.
static inline bool measured(bool gcn) { return DENSE_PERMILLE <= 1000 && (gcn || DENSE_KINDS == 1); }

// Rows [r0, r0 + nr) but the long ones: the dense block or CSR, by the subgraph's density.
// mark (M ints, all -1 on entry and on return): a column's place in the tile's union; cols: the
// union (room for M). Both thread-local, passed as pointers: a thread_local touched per edge in
// a kernel loaded with dlopen costs a __tls_get_addr call per access (the CSR-only variant ran
// 1.6-4.4x slower in the bench that way).
static void tile_block(bool gcn, const int* row_ptr, const int* col_idx, const float* H, float* out, int M,
                       int N, int r0, int nr, int n0, int nc, int* mark, int* cols) {
  const int threshold = long_threshold(row_ptr, M);
  bool skip[RT] = {};
  long long nnz = 0;
  int rows = 0, U = 0;
  for (int i = 0; i < nr; ++i) {
    const int r = r0 + i, p0 = row_ptr[r], p1 = row_ptr[r + 1];
    skip[i] = is_long(row_ptr, r, threshold);
    if (skip[i] || p1 == p0) continue;
    ++rows, nnz += p1 - p0;
    for (int p = p0; p < p1; ++p) {
      const int c = col_idx[p];
      if (mark[c] < 0) mark[c] = U, cols[U++] = c;
    }
  }
  if (U > 0 && (double)nnz * 1000.0 >= (double)DENSE_PERMILLE * rows * U) {
    float* w = scratch_floats(0, (long long)U * RT);
    for (long long e = 0; e < (long long)U * RT; ++e) w[e] = 0.0f;
    for (int i = 0; i < nr; ++i) {
      if (skip[i]) continue;
      const int r = r0 + i;
      const float len_r = row_ptr[r + 1] - row_ptr[r];
      for (int p = row_ptr[r]; p < row_ptr[r + 1]; ++p) {
        const int c = col_idx[p];
        w[(long long)mark[c] * RT + i] = gnn_weight(gcn, row_ptr, len_r, c);  // no column twice in a row
      }
    }
    for (int u = 0; u < U; ++u) mark[cols[u]] = -1;
    dense_tile(gcn, row_ptr, H, out, N, r0, nr, skip, cols, U, w, n0, nc);
    return;
  }
  for (int u = 0; u < U; ++u) mark[cols[u]] = -1;
  for (int i = 0; i < nr; ++i)
    if (!skip[i])
      gnn_edges(gcn, row_ptr, col_idx, H, N, r0 + i, row_ptr[r0 + i], row_ptr[r0 + i + 1], true, n0, nc,
                out + (long long)(r0 + i) * N + n0);
}

// ---- the edge-parallel path --------------------------------------------------------------------
// Slots for the pieces of rows cut across splitter blocks: per (strip, splitter) two of BN floats
// (0: the piece of the row that starts in this splitter's range, 1: of the row that started
// before it), and per (strip, splitter) the count of finished pieces of the row starting there.
// Kept between launches (every count is back at 0 when a launch ends); all blocks of a launch
// ask for the same size, so only the first to ask can grow them, before any block uses them.
namespace split_state {
static std::mutex grow;
static float* partials = nullptr;
static std::atomic<int>* done = nullptr;
static long long capacity = 0;  // in (strip, splitter) pairs

static void ensure(long long pairs) {
  std::lock_guard<std::mutex> lock(grow);
  if (capacity >= pairs) return;
  delete[] partials;
  delete[] done;
  partials = new float[pairs * 2 * BN];
  done = new std::atomic<int>[pairs]();
  for (long long i = 0; i < pairs; ++i) done[i].store(0, std::memory_order_relaxed);
  capacity = pairs;
}

// The long rows, found once per launch: the first splitter block to arrive scans all M rows
// (under `scan`; the others wait only for that running block), the last to finish clears the list
// for the next launch (every splitter block of a launch finishes before the next launch starts).
// Each splitter scanning for itself cost SPLITS scans of M rows a launch: on `mixed` at M = 16384,
// where no row is long, adaptive ran 0.92x of CSR-only for the mean (loaded host).
static std::mutex scan;
static bool scanned = false;
static std::vector<int> long_rows;          // in row order
static std::vector<long long> long_first;  // a long row's first edge among the long rows' edges
static long long long_edges = 0;            // L: all the long rows' edges
static std::atomic<long long> finished{0};  // splitter blocks of this launch that are done

static void find_long_rows(const int* row_ptr, int M) {
  std::lock_guard<std::mutex> lock(scan);
  if (scanned) return;
  const int threshold = long_threshold(row_ptr, M);
  long_rows.clear(), long_first.clear(), long_edges = 0;
  scanned = true;
  int any = 0;  // first whether any row is long at all (the usual answer is no): one vector pass
  for (int r = 0; r < M; ++r) any |= row_ptr[r + 1] - row_ptr[r] >= threshold;
  if (!any) return;
  for (int r = 0; r < M; ++r)
    if (is_long(row_ptr, r, threshold)) {
      long_rows.push_back(r), long_first.push_back(long_edges);
      long_edges += (long long)(row_ptr[r + 1] - row_ptr[r]);
    }
}

static void finish(long long blocks) {
  if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == blocks) {
    std::lock_guard<std::mutex> lock(scan);
    finished.store(0, std::memory_order_relaxed);
    scanned = false;
  }
}
}  // namespace split_state

// Splitter s of SPLITS: edges [L·s/S, L·(s+1)/S) of the long rows (L of them in all, in row order).
#define KF_SPLITS (SPLITS > 0 ? SPLITS : 1)  // never 0 in a division (no splitter runs with SPLITS 0)
static void split_range(bool gcn, const int* row_ptr, const int* col_idx, const float* H, float* out, int N,
                        long long strip, long long strips, int s, int n0, int nc) {
  const long long L = split_state::long_edges;
  const auto bound = [&](long long t) { return L * t / KF_SPLITS; };
  const long long lo = bound(s), hi = bound(s + 1);
  if (L == 0 || lo == hi) return;  // no long row (the usual case): nothing more to read
  const auto owner = [&](long long e) {  // the splitter whose range holds edge e
    long long t = e * KF_SPLITS / L;
    while (t + 1 < KF_SPLITS && bound(t + 1) <= e) ++t;
    while (bound(t) > e) --t;
    return t;
  };
  split_state::ensure(strips * KF_SPLITS);
  const int nlong = (int)split_state::long_rows.size();
  for (int k = 0; k < nlong && split_state::long_first[k] < hi; ++k) {
    const int r = split_state::long_rows[k];
    const long long a = split_state::long_first[k];  // the row's first edge among the long rows'
    const int p0 = row_ptr[r], len = row_ptr[r + 1] - p0;
    const long long b = a + len;
    if (b > lo) {
      float* o = out + (long long)r * N + n0;
      const long long first = owner(a), last = owner(b - 1);
      if (first == last) {
        gnn_edges(gcn, row_ptr, col_idx, H, N, r, p0, p0 + len, true, n0, nc, o);
      } else {
        const long long e0 = a > lo ? a : lo, e1 = b < hi ? b : hi;
        const auto slot = [&](long long t, int side) { return split_state::partials + ((strip * KF_SPLITS + t) * 2 + side) * BN; };
        gnn_edges(gcn, row_ptr, col_idx, H, N, r, p0 + (int)(e0 - a), p0 + (int)(e1 - a), s == first, n0, nc,
                  slot(s, s == first ? 0 : 1));
        int pieces = 0;
        for (long long t = first; t <= last; ++t) pieces += bound(t + 1) > bound(t);
        std::atomic<int>& done = split_state::done[strip * KF_SPLITS + first];
        if (done.fetch_add(1, std::memory_order_acq_rel) == pieces - 1) {  // the row's last piece: add them up
          done.store(0, std::memory_order_relaxed);
          const float* head = slot(first, 0);
          for (int j = 0; j < nc; ++j) o[j] = head[j];
          for (long long t = first + 1; t <= last; ++t) {
            if (bound(t + 1) == bound(t)) continue;
            const float* piece = slot(t, 1);
            for (int j = 0; j < nc; ++j) o[j] += piece[j];
          }
        }
      }
    }
  }
}

static void split_block(bool gcn, const int* row_ptr, const int* col_idx, const float* H, float* out, int M,
                        int N, long long strip, long long strips, int s, int n0, int nc) {
  split_state::find_long_rows(row_ptr, M);
  split_range(gcn, row_ptr, col_idx, H, out, N, strip, strips, s, n0, nc);
  split_state::finish(strips * KF_SPLITS);
}

#include "kernels/common/equal_work_rows.hpp"  // first_row_at: equal-work row blocks

static void gnn_adaptive_block(const kf_ctx& ctx, const int* row_ptr, const int* col_idx, const float* H,
                               float* out, int M, int N, int NNZ, float pattern, float kind) {
  (void)NNZ, (void)pattern;
  const bool gcn = kind == 0.0f;
  const int n0 = (int)ctx.block_idx.x * BN, nc = N - n0 < BN ? N - n0 : BN;
  const long long nb = ctx.grid_dim.y - SPLITS, y = ctx.block_idx.y;
  if (y >= nb) {
    split_block(gcn, row_ptr, col_idx, H, out, M, N, ctx.block_idx.x, ctx.grid_dim.x, (int)(y - nb), n0, nc);
    return;
  }
  // Block y: the whole tiles whose rows' cost prefix falls in its share of the work (a tile per
  // block would cost the pool more hand-offs than a small tile's work).
  const bool measure = measured(gcn);
  const int rt = measure ? RT : 1;  // no tiles where none is measured: gnn_aggregate.cpu's blocks
  const double total = (double)row_ptr[M] + M;
  const int r0 = y == 0 ? 0 : first_row_at(row_ptr, M, total * y / nb) / rt * rt;
  const int r1 = y == nb - 1 ? M : first_row_at(row_ptr, M, total * (y + 1) / nb) / rt * rt;
  if (!measure) {  // CSR for every row but the long ones: gnn_aggregate.cpu's loop, no tiles
    const int threshold = long_threshold(row_ptr, M);
    for (int r = r0; r < r1; ++r)
      if (!is_long(row_ptr, r, threshold))
        gnn_edges(gcn, row_ptr, col_idx, H, N, r, row_ptr[r], row_ptr[r + 1], true, n0, nc,
                  out + (long long)r * N + n0);
    return;
  }
  thread_local std::vector<int> mark, cols;
  if ((int)mark.size() < M) mark.assign(M, -1), cols.resize(M);
  int* const mk = mark.data();
  int* const cl = cols.data();
  for (int t = r0; t < r1; t += RT)
    tile_block(gcn, row_ptr, col_idx, H, out, M, N, t, M - t < RT ? M - t : RT, n0, nc, mk, cl);
}

KF_KERNEL(gnn_aggregate_adaptive, gnn_adaptive_block)
