// kernel_kmeans for the cpu backend: one Lloyd step of kernel k-means, never an N x N buffer.
// The kernel is a scalar argument: kernel 0 RBF exp(-gamma d2), 1 polynomial
// (gamma <x_i, x_j> + coef0)^degree (the dot product in registers where RBF keeps d2, the power
// by degree - 1 products; a template parameter, so the RBF path is the same code as before).
//
// Pass 1 (every block): a block owns BI consecutive rows i and walks the points j in tiles of
// TJ. Each tile is counting-sorted by label as it is copied, transposed (D x P floats), into
// one segment per cluster padded to whole SIMD vectors (pads weigh 0), so that the kernel values
// k(x_i, x_j) = exp(-gamma d2) are computed over the tile in vectors, RB rows per loaded vector
// with d2 in registers up to the exp, and summed per cluster over contiguous segments: S_ic, no
// scatter. The sort is paid once per tile and reused by all BI rows. The block writes its rows
// of S into DIST. (N=8000, D=3, K=8 on the loaded 2-core host: RB=4, TJ=1024 ran in 0.35-0.45x
// the time of one row at a time with d2 stored between passes.)
// Pass 2 (the last block to finish, counted in SYNC): the cluster sizes |c|, the cluster terms
// z_c = (sum_{i in c} S_ic) / |c| / |c|, then for every row DIST_ic = 1 - 2 S_ic / |c| + z_c
// and NEWL_i = the first argmin. k(x_i, x_i) (1 for RBF) is computed in pass 1 and parked in
// NEWL_i, which pass 2 reads before it writes the label. O(N K), beside pass 1's O(N^2 D).
// It resets SYNC to zero for the next launch.
//
// Parameters (all #defines):
//   BI  rows per block        TJ  points per tile (a multiple of the SIMD width)
//   RB  rows that share each loaded tile vector (register blocking; the block's tail goes by 1)
#ifndef BI
#define BI 64
#endif
#ifndef TJ
#define TJ 1024
#endif
#ifndef RB
#define RB 4
#endif
#include <float.h>
#include <stdlib.h>

typedef kf_storage T;  // fp32
typedef kf_vf vf;

// Pass 1's tile: the points of j0 .. j0 + nj sorted by label into padded segments.
struct km_tile {
  float* yt;   // (D, P): coordinates, transposed
  float* w;    // (P): 1 for a point, 0 for padding
  int* seg;    // (K + 1): cluster c's vectors are seg[c] .. seg[c + 1] (in units of KF_VW)
  int* fill;   // (K): scratch of the sort
};

// A label as a cluster index, clamped into [0, K) as the reference does (inputs are integers).
static inline int km_label(const T* L, long long j, int K) {
  const int c = (int)L[j];
  return c < 0 ? 0 : c >= K ? K - 1 : c;
}

static void km_build_tile(const T* X, const T* L, int j0, int nj, int D, int K, int P, km_tile& t) {
  for (int c = 0; c < K; ++c) t.fill[c] = 0;
  for (int j = 0; j < nj; ++j) ++t.fill[km_label(L, j0 + j, K)];
  int v = 0;
  for (int c = 0; c < K; ++c) t.seg[c] = v, v += (t.fill[c] + KF_VW - 1) / KF_VW, t.fill[c] = t.seg[c] * KF_VW;
  t.seg[K] = v;
  for (int p = 0; p < v * KF_VW; ++p) t.w[p] = 0.0f;
  for (int d = 0; d < D; ++d)
    for (int p = 0; p < v * KF_VW; ++p) t.yt[(long long)d * P + p] = 0.0f;
  for (int j = 0; j < nj; ++j) {
    const int p = t.fill[km_label(L, j0 + j, K)]++;
    t.w[p] = 1.0f;
    for (int d = 0; d < D; ++d) t.yt[(long long)d * P + p] = X[(long long)(j0 + j) * D + d];
  }
}

// acc[r * K + c] += sum over the tile's points j of cluster c of k(x_r, x_j), for the R rows
// x_r at x (rows of D): each tile vector is loaded once for R rows, and the squared distances
// (RBF) or dot products (POLY) stay in registers up to the exp or the power.
template <int R, bool POLY>
static void km_rows(const T* x, const km_tile& t, int D, int K, int P, float gamma, int degree, float coef0,
                    float* acc) {
  for (int c = 0; c < K; ++c) {
    if (t.seg[c + 1] == t.seg[c]) continue;
    vf s[R];
    for (int r = 0; r < R; ++r) s[r] = kf_splat(0.0f);
    for (int q = t.seg[c]; q < t.seg[c + 1]; ++q) {
      vf d2[R];
      for (int r = 0; r < R; ++r) d2[r] = kf_splat(0.0f);
      for (int d = 0; d < D; ++d) {
        const vf y = kf_load(t.yt + (long long)d * P + q * KF_VW);
        for (int r = 0; r < R; ++r) {
          if (POLY) {
            d2[r] += kf_splat(x[(long long)r * D + d]) * y;  // here the dot product
          } else {
            const vf diff = kf_splat(x[(long long)r * D + d]) - y;
            d2[r] += diff * diff;
          }
        }
      }
      const vf w = kf_load(t.w + q * KF_VW);
      for (int r = 0; r < R; ++r) {
        if (POLY) {
          const vf b = d2[r] * gamma + coef0;
          vf k = b;
          for (int e = 1; e < degree; ++e) k *= b;
          s[r] += k * w;
        } else {
          s[r] += kf_exp(d2[r] * -gamma) * w;
        }
      }
    }
    for (int r = 0; r < R; ++r) acc[r * K + c] += kf_hsum(s[r]);
  }
}

// k(x_i, x_i) for row x (D values): 1 for RBF, (gamma |x|^2 + coef0)^degree for the polynomial.
static float km_self(const T* x, int D, int poly, float gamma, int degree, float coef0) {
  if (!poly) return 1.0f;
  float s = 0.0f;
  for (int d = 0; d < D; ++d) s += x[d] * x[d];
  const float b = s * gamma + coef0;
  float k = b;
  for (int e = 1; e < degree; ++e) k *= b;
  return k;
}

// Pass 2, by the last block: DIST from S in place, NEWL (holding k(x_i, x_i) on entry), for all
// N rows.
static void km_finish(const T* L, T* DIST, T* NEWL, int N, int K) {
  float* n = (float*)malloc(sizeof(float) * 2 * (size_t)K);
  float* z = n + K;
  for (int c = 0; c < K; ++c) n[c] = 0.0f, z[c] = 0.0f;
  for (int i = 0; i < N; ++i) {
    const int c = km_label(L, i, K);
    n[c] += 1.0f, z[c] += DIST[(long long)i * K + c];
  }
  for (int c = 0; c < K; ++c) z[c] = n[c] > 0 ? z[c] / n[c] / n[c] : 0.0f;
  for (int i = 0; i < N; ++i) {
    T* row = DIST + (long long)i * K;
    int best = 0;
    for (int c = 0; c < K; ++c) {
      row[c] = n[c] > 0 ? NEWL[i] - 2.0f * (row[c] / n[c]) + z[c] : FLT_MAX;
      if (row[c] < row[best]) best = c;  // strict: a tie keeps the lowest cluster
    }
    NEWL[i] = (float)best;
  }
  free(n);
}

static void kernel_kmeans_block(const kf_ctx& ctx, const T* X, const T* L, T* DIST, T* NEWL, T* SYNC, int N, int D,
                                int K, float gamma, float kind, float degree, float coef0) {
  const int poly = kind != 0.0f, p = (int)degree;
  const int i0 = (int)ctx.block_idx.x * BI;
  const int ni = N - i0 < BI ? N - i0 : BI;
  // P: the most padded slots a tile can need (each cluster present adds at most one vector).
  const int P = TJ + (K < TJ ? K : TJ) * KF_VW;
  float* mem = (float*)aligned_alloc(64, sizeof(float) * ((size_t)(D + 1) * P + (size_t)BI * K + 2 * (size_t)K + 64));
  km_tile t;
  t.yt = mem;
  t.w = t.yt + (size_t)D * P;
  float* acc = t.w + P;  // (BI, K)
  t.seg = (int*)(acc + (size_t)BI * K);
  t.fill = t.seg + K + 1;
  for (int k = 0; k < BI * K; ++k) acc[k] = 0.0f;
  for (int j0 = 0; j0 < N; j0 += TJ) {
    const int nj = N - j0 < TJ ? N - j0 : TJ;
    km_build_tile(X, L, j0, nj, D, K, P, t);
    int r = 0;
    if (poly) {
      for (; r + RB <= ni; r += RB)
        km_rows<RB, true>(X + (long long)(i0 + r) * D, t, D, K, P, gamma, p, coef0, acc + r * K);
      for (; r < ni; ++r) km_rows<1, true>(X + (long long)(i0 + r) * D, t, D, K, P, gamma, p, coef0, acc + r * K);
    } else {
      for (; r + RB <= ni; r += RB)
        km_rows<RB, false>(X + (long long)(i0 + r) * D, t, D, K, P, gamma, p, coef0, acc + r * K);
      for (; r < ni; ++r) km_rows<1, false>(X + (long long)(i0 + r) * D, t, D, K, P, gamma, p, coef0, acc + r * K);
    }
  }
  for (int r = 0; r < ni; ++r) NEWL[i0 + r] = km_self(X + (long long)(i0 + r) * D, D, poly, gamma, p, coef0);
  for (int r = 0; r < ni; ++r)
    for (int c = 0; c < K; ++c) DIST[(long long)(i0 + r) * K + c] = acc[r * K + c];
  free(mem);
  // SYNC's bits are the counter (0.0f is all zero bits). Release: this block's S rows are
  // visible to whoever counts last; acquire: the last sees every block's.
  unsigned* count = (unsigned*)SYNC;
  if (__atomic_add_fetch(count, 1u, __ATOMIC_ACQ_REL) != (unsigned)ctx.grid_dim.x) return;
  km_finish(L, DIST, NEWL, N, K);
  __atomic_store_n(count, 0u, __ATOMIC_RELEASE);
}

KF_KERNEL(kernel_kmeans, kernel_kmeans_block)
