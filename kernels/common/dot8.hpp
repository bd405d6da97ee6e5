#pragma once
// Eight dot products at once, x against eight rows y[0..8), for the sparse cpu kernels whose
// work is one dot product per nonzero (sddmm.cpu, fusedmm.cpu's dot phase): 8 accumulators of
// one vector each, every load of x (from L1: the row is reused across its nonzeros) feeding 8
// FMAs with 8 neighbours' rows, then the 8 vectors reduced into one vector of the 8 sums by a
// shuffle tree (14 shuffles and 7 adds for 8 dots). Summing each dot's lanes one add at a time
// costs about 8 dependent adds per dot: at D = 32 that cost more than the dot's 4 FMAs.
//
// Needs the cpu prelude's kf_vf / kf_load at KF_VW = 8 or 16 (the kernels' VW parameter).

typedef float dot8_sums __attribute__((vector_size(32)));

// 8 vectors into one of 8 sums: lane i of the result = the sum of a[i]'s lanes.
static inline dot8_sums sum8(const kf_vf a[8]) {
  dot8_sums h[8];
  for (int i = 0; i < 8; ++i) {
#if KF_VW == 16
    h[i] = __builtin_shufflevector(a[i], a[i], 0, 1, 2, 3, 4, 5, 6, 7) +
           __builtin_shufflevector(a[i], a[i], 8, 9, 10, 11, 12, 13, 14, 15);
#elif KF_VW == 8
    h[i] = a[i];
#else
#error "kernels/common/dot8.hpp: VW must be 8 or 16"
#endif
  }
  dot8_sums t[4], u[2];
  for (int i = 0; i < 4; ++i)  // [a0+a1, b0+b1, a2+a3, b2+b3, ...] for a, b = h[2i], h[2i+1]
    t[i] = __builtin_shufflevector(h[2 * i], h[2 * i + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
           __builtin_shufflevector(h[2 * i], h[2 * i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
  for (int i = 0; i < 2; ++i)  // [a0123, b, c, d, a4567, b, c, d]
    u[i] = __builtin_shufflevector(t[2 * i], t[2 * i + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
           __builtin_shufflevector(t[2 * i], t[2 * i + 1], 2, 3, 10, 11, 6, 7, 14, 15);
  return __builtin_shufflevector(u[0], u[1], 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(u[0], u[1], 4, 5, 6, 7, 12, 13, 14, 15);
}

// Lane i = x · y[i] over the columns [0, D - D % KF_VW); the caller adds the last D % KF_VW.
static inline dot8_sums dot8(const float* x, const float* const y[8], int D) {
  kf_vf acc[8] = {};
  for (int d = 0; d + KF_VW <= D; d += KF_VW) {
    const kf_vf xv = kf_load(x + d);
    for (int i = 0; i < 8; ++i) acc[i] += xv * kf_load(y[i] + d);
  }
  return sum8(acc);
}
