// moe_grouped_gemm for the cpu backend: dispatch, grouped GEMM and combine in ONE launch.
//
// Each block owns the output strip Y[t0:t0+TCHUNK, n0:n0+BN] (grid: column blocks x token
// chunks), so the combine needs no atomics: only this block ever writes these elements.
// The block first builds its schedule from the routing (a counting sort of its (token, slot)
// pairs by expert: offsets[e] .. offsets[e+1] are expert e's rows, in token order), then walks
// the tiles (expert e, row block of MR gathered rows, this column block):
//   dispatch  pack the MR gathered X rows (a KC slice at a time) into an A panel
//   GEMM      register-tiled micro-kernel against W[e] packed into NR-wide panels (zero-padded)
//   combine   Y[token, :] += gate * tile, in expert order (deterministic)
// Experts with no token cost nothing; no padding to a capacity, no per-expert launch.
//
// Parameters (all #defines):
//   MR      gathered rows per micro-tile     NV  SIMD vectors per micro-tile row (NR = NV*VW)
//   VW      SIMD width in floats (0: widest) BN  columns of Y per block
//   KC      reduction slice kept in L1       TCHUNK  tokens per block (more blocks for small F)
#include <cstdlib>
#include <cstring>

#if VW == 0
#undef VW
#if defined(__AVX512F__)
#define VW 16
#else
#define VW 8
#endif
#endif
#define NR (NV * VW)

typedef float vf __attribute__((vector_size(VW * 4)));

// Per-thread scratch (0: W panels, 1: A panel, 2: schedule), kept at the largest size used.
static void* scratch(int which, long long bytes) {
  static thread_local void* buf[3] = {nullptr, nullptr, nullptr};
  static thread_local long long cap[3] = {0, 0, 0};
  if (cap[which] < bytes) {
    std::free(buf[which]);
    buf[which] = std::aligned_alloc(64, ((bytes + 63) / 64) * 64);
    cap[which] = bytes;
  }
  return buf[which];
}

// W[e][:, n0:n0+nc] -> panels of NR columns: Wp[panel][h][NR], zero beyond nc.
static void pack_w(const float* We, int H, int F, int n0, int nc, float* Wp) {
  for (int j0 = 0; j0 < nc; j0 += NR) {
    float* dst = Wp + (long long)(j0 / NR) * H * NR;
    const int w = nc - j0 < NR ? nc - j0 : NR;
    for (int h = 0; h < H; ++h) {
      const float* src = We + (long long)h * F + n0 + j0;
      float* d = dst + (long long)h * NR;
      for (int j = 0; j < w; ++j) d[j] = src[j];
      for (int j = w; j < NR; ++j) d[j] = 0.0f;
    }
  }
}

// Rows X[tok[i], k0:k0+kc] (i < rows) -> Ap[k][MR], zero beyond rows.
static void pack_rows(const float* X, int H, const int* tok, int rows, int k0, int kc, float* Ap) {
  for (int i = 0; i < rows; ++i) {
    const float* src = X + (long long)tok[i] * H + k0;
    for (int k = 0; k < kc; ++k) Ap[k * MR + i] = src[k];
  }
  for (int i = rows; i < MR; ++i)
    for (int k = 0; k < kc; ++k) Ap[k * MR + i] = 0.0f;
}

// acc += A panel (kc x MR) times W panel (kc x NR); the sums live in registers (c) meanwhile.
static inline void micro_kernel(int kc, const float* __restrict a, const float* __restrict b,
                                vf acc[MR][NV]) {
  vf c[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) c[i][v] = acc[i][v];
#pragma GCC unroll 4
  for (int k = 0; k < kc; ++k) {
    vf bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = *(const vf*)(b + k * NR + v * VW);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float ai = a[k * MR + i];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) c[i][v] += ai * bv[v];
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = c[i][v];
}

static void moe_block(const kf_ctx& ctx, const float* X, const float* ids, const float* gate,
                      const float* W, float* Y, int T, int H, int F, int E, int K) {
  const int n0 = (int)ctx.block_idx.x * BN, t0 = (int)ctx.block_idx.y * TCHUNK;
  const int nc = F - n0 < BN ? F - n0 : BN, tc = T - t0 < TCHUNK ? T - t0 : TCHUNK;
  const int panels = (nc + NR - 1) / NR;
  for (int t = 0; t < tc; ++t) std::memset(Y + (long long)(t0 + t) * F + n0, 0, nc * sizeof(float));

  // Schedule: a counting sort of the block's (token, slot) pairs by expert. offsets[e] is the
  // first row of expert e; row r is the pair token*K + slot, pair[r], of token tok[r].
  int* offsets = (int*)scratch(2, (long long)(2 * E + 1 + 2 * tc * K) * sizeof(int));
  int* cursor = offsets + E + 1;
  int* pair = cursor + E;
  int* tok = pair + tc * K;
  std::memset(offsets, 0, (E + 1) * sizeof(int));
  for (int i = t0 * K; i < (t0 + tc) * K; ++i) {
    const int e = (int)ids[i];
    if (e >= 0 && e < E) ++offsets[e + 1];  // invalid ids route nowhere (inputs guarantee none)
  }
  for (int e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
  for (int e = 0; e < E; ++e) cursor[e] = offsets[e];
  for (int i = t0 * K; i < (t0 + tc) * K; ++i) {
    const int e = (int)ids[i];
    if (e >= 0 && e < E) pair[cursor[e]++] = i;
  }
  for (int r = 0; r < offsets[E]; ++r) tok[r] = pair[r] / K;

  const int kc_max = H < KC ? H : KC;
  float* Wp = (float*)scratch(0, (long long)H * panels * NR * sizeof(float));
  float* Ap = (float*)scratch(1, (long long)kc_max * MR * sizeof(float));
  for (int e = 0; e < E; ++e) {
    const int first = offsets[e], rows_e = offsets[e + 1] - first;
    if (rows_e == 0) continue;
    pack_w(W + (long long)e * H * F, H, F, n0, nc, Wp);
    for (int r0 = 0; r0 < rows_e; r0 += MR) {
      const int rows = rows_e - r0 < MR ? rows_e - r0 : MR;
      vf acc[(BN + NR - 1) / NR][MR][NV];
      for (int p = 0; p < panels; ++p)
        for (int i = 0; i < MR; ++i)
          for (int v = 0; v < NV; ++v) acc[p][i][v] = vf{};
      for (int k0 = 0; k0 < H; k0 += KC) {
        const int kc = H - k0 < KC ? H - k0 : KC;
        pack_rows(X, H, tok + first + r0, rows, k0, kc, Ap);
        for (int p = 0; p < panels; ++p)
          micro_kernel(kc, Ap, Wp + (long long)p * H * NR + (long long)k0 * NR, acc[p]);
      }
      for (int i = 0; i < rows; ++i) {  // combine: this block owns these Y elements
        const int pr = pair[first + r0 + i];
        const float g = gate[pr];
        float* y = Y + (long long)(pr / K) * F + n0;
        for (int p = 0; p < panels; ++p) {
          const float* row = (const float*)&acc[p][i][0];
          const int cols = nc - p * NR < NR ? nc - p * NR : NR;
          for (int j = 0; j < cols; ++j) y[p * NR + j] += g * row[j];
        }
      }
    }
  }
}

KF_KERNEL(moe_grouped_gemm, moe_block)
