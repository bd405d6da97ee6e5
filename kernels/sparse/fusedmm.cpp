// fusedmm for the cpu backend: out[r, :] = Σ_{p in row r} op(X[r, :] · Y[c_p, :]) · Z[c_p, :].
//
// Grid: RBLOCKS row blocks of equal work (rows whose cost prefix row_ptr[r] + r falls in the
// block's share, by binary search, as spmm.cpp). A row goes in chunks of CH nonzeros: first the
// chunk's sampled values, one vectorized dot product of length D each (NV accumulators; X's row
// stays in L1), into a CH-float array on the stack; then the chunk's SpMM update, CW = NV * VW
// columns of registers at a time over the whole output row, vector then scalar tails. The
// first chunk stores, later chunks load, add and store, so each output element sums its row's
// nonzeros in order (deterministic) and the sampled values never reach memory beyond L1.
// Rows with no nonzeros store zeros.
//
// Parameters (#defines): CH nonzeros per chunk, NV accumulators, VW floats per vector (0:
// widest), RBLOCKS row blocks.
#include <cmath>

#define CW (NV * KF_VW)

static int first_row_at(const float* row_ptr, int M, double target) {
  int lo = 0, hi = M;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if ((double)row_ptr[mid] + mid < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static inline float dot(const float* a, const float* b, int D) {
  kf_vf acc[NV] = {};
  int d = 0;
  for (; d + NV * KF_VW <= D; d += NV * KF_VW)
    for (int v = 0; v < NV; ++v) acc[v] += kf_load(a + d + v * KF_VW) * kf_load(b + d + v * KF_VW);
  for (; d + KF_VW <= D; d += KF_VW) acc[0] += kf_load(a + d) * kf_load(b + d);
  for (int v = 1; v < NV; ++v) acc[0] += acc[v];
  float s = 0;
  for (int l = 0; l < KF_VW; ++l) s += acc[0][l];
  for (; d < D; ++d) s += a[d] * b[d];
  return s;
}

// out[0:N] (= or +=) Σ_i w[i] · Z[col[i], 0:N] over a chunk of n nonzeros.
static void update(float* out, const float* w, const float* col, int n, const float* Z, int N, bool first) {
  int j = 0;
  for (; j + CW <= N; j += CW) {
    kf_vf acc[NV] = {};
    if (!first)
      for (int v = 0; v < NV; ++v) acc[v] = kf_load(out + j + v * KF_VW);
    for (int i = 0; i < n; ++i) {
      const kf_vf a = kf_splat(w[i]);
      const float* z = Z + (long long)(int)col[i] * N + j;
      for (int v = 0; v < NV; ++v) acc[v] += a * kf_load(z + v * KF_VW);
    }
    for (int v = 0; v < NV; ++v) kf_store(out + j + v * KF_VW, acc[v]);
  }
  for (; j + KF_VW <= N; j += KF_VW) {
    kf_vf acc = {};
    if (!first) acc = kf_load(out + j);
    for (int i = 0; i < n; ++i) acc += kf_splat(w[i]) * kf_load(Z + (long long)(int)col[i] * N + j);
    kf_store(out + j, acc);
  }
  for (; j < N; ++j) {
    float acc = first ? 0.0f : out[j];
    for (int i = 0; i < n; ++i) acc += w[i] * Z[(long long)(int)col[i] * N + j];
    out[j] = acc;
  }
}

static void fusedmm_block(const kf_ctx& ctx, const float* row_ptr, const float* col_idx, const float* X,
                          const float* Y, const float* Z, float* out, int M, int K, int D, int N, int NNZ,
                          float pattern, float op) {
  (void)K, (void)NNZ, (void)pattern;
  const bool sigmoid = op == 1.0f;
  const long long nb = ctx.grid_dim.x, b = ctx.block_idx.x;
  const double total = (double)row_ptr[M] + M;
  const int r0 = b == 0 ? 0 : first_row_at(row_ptr, M, total * b / nb);
  const int r1 = b == nb - 1 ? M : first_row_at(row_ptr, M, total * (b + 1) / nb);
  float w[CH];
  for (int r = r0; r < r1; ++r) {
    const float* x = X + (long long)r * D;
    float* o = out + (long long)r * N;
    const int p0 = (int)row_ptr[r], p1 = (int)row_ptr[r + 1];
    if (p0 == p1) {
      for (int j = 0; j < N; ++j) o[j] = 0.0f;
      continue;
    }
    for (int q = p0; q < p1; q += CH) {
      const int n = p1 - q < CH ? p1 - q : CH;
      for (int i = 0; i < n; ++i) {
        const float s = dot(x, Y + (long long)(int)col_idx[q + i] * D, D);
        w[i] = sigmoid ? 1.0f / (1.0f + std::exp(-s)) : s;
      }
      update(o, w, col_idx + q, n, Z, N, q == p0);
    }
  }
}

KF_KERNEL(fusedmm, fusedmm_block)
