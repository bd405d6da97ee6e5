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

// The checks every signature-kernel problem (sigkernel, sigkernel_grad, sigkernel_gram_grad)
// makes of its sizes: all at least 1 (DYADIC at least 0), both paths at least 2 points, DYADIC
// at most kMaxDyadic; and, where the gradient stores the fine grid per pair, at most
// `max_grid_nodes` nodes (0: no such limit).
template <class Sizes>
void check_pde_sizes(const Sizes& s, double max_grid_nodes = 0) {
  for (const auto& [k, v] : s)
    if (v < (k == "DYADIC" ? 0 : 1))
      throw UsageError("size " + k + "=" + std::to_string(v) + " must be at least " + (k == "DYADIC" ? "0" : "1"));
  for (const char* l : {"L1", "L2"})
    if (s.at(l) < 2)
      throw UsageError(std::string("size ") + l + "=" + std::to_string(s.at(l)) +
                       " must be at least 2 (a path of one point has no increment)");
  if (s.at("DYADIC") > kMaxDyadic)
    throw UsageError("size DYADIC=" + std::to_string(s.at("DYADIC")) + " must be in [0, 4] (each increment split in 2^DYADIC)");
  if (max_grid_nodes <= 0) return;
  const double r = std::ldexp(1.0, static_cast<int>(s.at("DYADIC")));
  const double grid = ((s.at("L1") - 1) * r + 1) * ((s.at("L2") - 1) * r + 1);
  if (grid > max_grid_nodes)
    throw UsageError("sizes L1, L2, DYADIC give a grid of " + std::to_string(static_cast<long long>(grid)) +
                     " nodes per pair; the gradient stores it, at most " +
                     std::to_string(static_cast<long long>(max_grid_nodes)) + ": lower L1, L2 or DYADIC");
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
