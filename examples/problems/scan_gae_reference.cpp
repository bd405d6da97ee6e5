// The reference of examples.scan.gae in double: the reverse loop a practitioner writes, and its
// magnitude, the same loop over absolute values (it bounds any evaluation order's rounding).
#include <cmath>
#include <cstdint>

void gae_reference(const double* r, const double* v, const double* done, const double* boot,
                   double* adv, double* adv_magnitude, int64_t batch, int64_t time, double gamma,
                   double lambda) {
  for (int64_t b = 0; b < batch; ++b) {
    double next_v = boot[b], x = 0, m = 0;
    for (int64_t t = time - 1; t >= 0; --t) {
      const int64_t i = b * time + t;
      const double nonterminal = 1 - done[i];
      x = r[i] + gamma * nonterminal * next_v - v[i] + gamma * lambda * nonterminal * x;
      m = std::fabs(r[i]) + gamma * nonterminal * std::fabs(next_v) + std::fabs(v[i]) +
          gamma * lambda * nonterminal * m;
      next_v = v[i];
      adv[i] = x;
      adv_magnitude[i] = m;
    }
  }
}
