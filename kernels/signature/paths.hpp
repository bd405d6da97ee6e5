#pragma once
// What the signature family's problem files share: signature lengths, the size checks' ABI
// limit and the path conditioning (problem.cpp: signature and sigkernel; grad_problem.cpp:
// signature_grad).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kforge/error.hpp"

namespace kforge::signature_paths {

constexpr std::int64_t kMaxSigLen = 1LL << 24;  // floats per path's signature (64 MiB)
constexpr int kMaxLevel = 6;
constexpr int kMaxDyadic = 4;

// D + D^2 + ... + D^N; 0 when it passes kMaxSigLen (so it cannot overflow).
inline std::int64_t signature_length(std::int64_t D, std::int64_t N) {
  std::int64_t len = 0, p = 1;
  for (std::int64_t k = 1; k <= N; ++k) {
    if (p > kMaxSigLen / D) return 0;
    p *= D, len += p;
    if (len > kMaxSigLen) return 0;
  }
  return len;
}

inline void check_int_abi(const std::string& what, double n) {
  if (n > (1LL << 31) - 1)
    throw UsageError("sizes " + what + "=" + std::to_string(static_cast<long long>(n)) +
                     " must fit in a 32-bit int (the kernel ABI)");
}

// Each path (L points of D channels at `x`) scaled by a power of two (exact) so that its total
// variation sum_t |Δ_t|_1 is at most `tv`: the signature's level k is at most tv^k / k! and the
// signature kernel at most exp(tv_x tv_y), so fp32 neither overflows nor loses everything to
// rounding whatever the distribution drew. The distributions' shapes (wide, sparse, integers)
// are kept.
inline void scale_paths(std::vector<double>& x, std::int64_t paths, std::int64_t L, std::int64_t D, double tv) {
  for (std::int64_t b = 0; b < paths; ++b) {
    double* p = &x[b * L * D];
    double v = 0;
    for (std::int64_t t = 0; t + 1 < L; ++t)
      for (std::int64_t d = 0; d < D; ++d) v += std::fabs(p[(t + 1) * D + d] - p[t * D + d]);
    if (v <= tv) continue;
    const double f = std::ldexp(1.0, -static_cast<int>(std::ceil(std::log2(v / tv))));
    for (std::int64_t e = 0; e < L * D; ++e) p[e] *= f;
  }
}

}  // namespace kforge::signature_paths
