// The reference of examples.embedding_gather: out[b, :] = table[ids[b], :], copied exactly (its
// magnitude is the value's own: a copy has no rounding to bound). ids arrive as doubles holding
// the int32 values the kernel sees.
#include <cmath>
#include <cstdint>

void embedding_gather_reference(const double* table, const double* ids, double* out, double* out_magnitude,
                                int64_t V, int64_t D, int64_t B) {
  (void)V;
  for (int64_t b = 0; b < B; ++b) {
    const auto row = static_cast<int64_t>(ids[b]);
    for (int64_t d = 0; d < D; ++d) {
      out[b * D + d] = table[row * D + d];
      out_magnitude[b * D + d] = std::fabs(out[b * D + d]);
    }
  }
}
