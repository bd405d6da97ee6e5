// WRONG on purpose: sigkernel (the Gram matrix of the signature kernel by its Goursat PDE,
// kernels/signature/README.md) with each cell's a = <Δx, Δy> formed from unit directions,
// a = <Δx/|Δx|, Δy/|Δy|> |Δx| |Δy| (the form a code that caches directions has). A zero
// increment gives 0/0 = NaN, and the NaN spreads over the rest of the grid. Drawn paths never
// repeat a point exactly, so random trials pass it.
// Caught by: `structured` (zero_rows makes every third path constant at 0, all_equal every path
//   constant: every increment zero; the element check inside is `finite`). Quick mode passes it.
//   build/kforge eval --problem sigkernel --lang cpp --grid 'B2,B1' \
//     --source tests/verify/wrong/sigkernel_normalized_increments.cpp \
//     --size B1=5,B2=7,L1=11,L2=13,D=3,DYADIC=1 --thorough --json
// Otherwise right: one block per pair, the scheme in double on the fine grid.
#include <cmath>
#include <vector>

static void body(const kf_ctx& ctx, const float* X, const float* Y, float* K, int B1, int B2, int L1, int L2, int D,
                 int DYADIC) {
  (void)B1;
  const long long b = ctx.block_idx.x, a = ctx.block_idx.y;
  const float* x = X + a * L1 * D;
  const float* y = Y + b * L2 * D;
  const int n1 = (L1 - 1) << DYADIC, n2 = (L2 - 1) << DYADIC;
  const double scale = std::ldexp(1.0, -2 * DYADIC);
  std::vector<double> prev(n2 + 1, 1.0), cur(n2 + 1, 1.0);
  for (int i = 0; i < n1; ++i) {
    const int ci = i >> DYADIC;
    double nx = 0;
    for (int d = 0; d < D; ++d) {
      const double t = (double)x[(ci + 1) * D + d] - x[ci * D + d];
      nx += t * t;
    }
    nx = std::sqrt(nx);
    cur[0] = 1.0;
    for (int j = 0; j < n2; ++j) {
      const int cj = j >> DYADIC;
      double ny = 0, dot = 0;
      for (int d = 0; d < D; ++d) {
        const double t = (double)y[(cj + 1) * D + d] - y[cj * D + d];
        ny += t * t;
      }
      ny = std::sqrt(ny);
      for (int d = 0; d < D; ++d)  // BUG: a zero increment divides 0 by 0
        dot += ((double)x[(ci + 1) * D + d] - x[ci * D + d]) / nx * (((double)y[(cj + 1) * D + d] - y[cj * D + d]) / ny);
      const double c = dot * nx * ny * scale;
      const double c1 = 1 + c / 2 + c * c / 12, c2 = 1 - c * c / 12;
      cur[j + 1] = (cur[j] + prev[j + 1]) * c1 - prev[j] * c2;
    }
    prev.swap(cur);
  }
  K[a * B2 + b] = (float)prev[n2];
}
KF_KERNEL(sigkernel, body)
