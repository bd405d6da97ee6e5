// WRONG on purpose: a path signature that normalizes each path by its largest increment (a
// "range guard": the scaled increments are at most 1, so no power of them overflows) and scales
// level k back by m^k: S^k(x) = m^k S^k(x / m), m = max_t |Δ_t|_inf. A constant path has m = 0,
// and 0/0 = NaN in every term (its signature is 0). Drawn point by point no path is constant
// (the requested D = 12 channels make even the sparse distribution's zero increments rare), so
// random trials pass it.
// Caught by: `structured` (identical_rows and all_equal make every path constant; the element
//   check inside is `finite`). Quick mode (random inputs only) passes it.
//   build/kforge eval --problem signature --lang cpp --grid B \
//     --source tests/verify/wrong/signature_divides_by_increment.cpp \
//     --size B=7,L=19,D=12,LEVEL=2 --thorough --json
// Otherwise right: one block per path, Chen's identity S <- S ⊗ exp(δ) in double, levels row-major.
#include <cmath>
#include <vector>

static void body(const kf_ctx& ctx, const float* X, float* SIG, int B, int L, int D, int LEVEL) {
  (void)B;
  const int b = (int)ctx.block_idx.x;
  const float* x = X + (long long)b * L * D;
  double m = 0;
  for (int t = 0; t + 1 < L; ++t)
    for (int i = 0; i < D; ++i) m = std::fmax(m, std::fabs((double)x[(t + 1) * D + i] - x[t * D + i]));
  std::vector<long long> size(LEVEL + 1, 1);
  for (int k = 1; k <= LEVEL; ++k) size[k] = size[k - 1] * D;
  std::vector<std::vector<double>> S(LEVEL + 1), E(LEVEL + 1), next(LEVEL + 1);
  for (int k = 0; k <= LEVEL; ++k) S[k].assign(size[k], k == 0 ? 1.0 : 0.0);
  std::vector<double> d(D);
  for (int t = 0; t + 1 < L; ++t) {
    for (int i = 0; i < D; ++i) d[i] = ((double)x[(t + 1) * D + i] - x[t * D + i]) / m;  // BUG: m may be 0
    E[0].assign(1, 1.0);  // exp(d): level k is d^{⊗k} / k!
    for (int k = 1; k <= LEVEL; ++k) {
      E[k].resize(size[k]);
      for (long long a = 0; a < size[k - 1]; ++a)
        for (int i = 0; i < D; ++i) E[k][a * D + i] = E[k - 1][a] * d[i] / k;
    }
    for (int k = 1; k <= LEVEL; ++k) {  // (S ⊗ E)^k = Σ_j S^j ⊗ E^(k-j)
      next[k].assign(size[k], 0.0);
      for (int j = 0; j <= k; ++j)
        for (long long a = 0; a < size[j]; ++a)
          for (long long c = 0; c < size[k - j]; ++c) next[k][a * size[k - j] + c] += S[j][a] * E[k - j][c];
    }
    for (int k = 1; k <= LEVEL; ++k) S[k].swap(next[k]);
  }
  long long siglen = 0;
  for (int k = 1; k <= LEVEL; ++k) siglen += size[k];
  float* out = SIG + (long long)b * siglen;
  double scale = 1;
  for (int k = 1; k <= LEVEL; ++k) {
    scale *= m;
    for (long long e = 0; e < size[k]; ++e) *out++ = (float)(S[k][e] * scale);
  }
}
KF_KERNEL(signature, body)
