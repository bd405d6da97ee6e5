// An 8 x 8 block of floats transposed in registers, for the cpu kernels that pack rows of A
// into k-major panels (kernels/common/packed_tile.hpp's pack_a for gemm and conv2d's 1x1
// kernel, kernels/moe's gather of tokens' rows): 8 rows' 8 floats loaded as vectors, transposed
// (unpack, shuffle, 128-bit lane swap: 24 shuffles per 64 floats) and stored as 8 contiguous
// runs of the panel's rows, where a scalar copy does one load and one scattered 4-byte store
// per element. 256-bit vectors whatever VW is: the same code on AVX2 and AVX-512.
#ifndef KF_TRANSPOSE8_HPP
#define KF_TRANSPOSE8_HPP
typedef float kf_v8 __attribute__((vector_size(32)));
typedef float kf_v8_unaligned __attribute__((vector_size(32), aligned(4)));

// r[i][k] -> r[k][i] for an 8 x 8 block of floats.
static inline void transpose8(kf_v8 r[8]) {
  kf_v8 t[8], u[8];
  for (int p = 0; p < 8; p += 2) {  // pairs of rows interleaved: k0 k0 k1 k1 | k4 k4 k5 k5 and the rest
    t[p] = __builtin_shufflevector(r[p], r[p + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[p + 1] = __builtin_shufflevector(r[p], r[p + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int q = 0; q < 8; q += 4)  // quads of rows: one k per 128-bit lane
    for (int h = 0; h < 2; ++h) {
      u[q + 2 * h] = __builtin_shufflevector(t[q + h], t[q + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[q + 2 * h + 1] = __builtin_shufflevector(t[q + h], t[q + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (int k = 0; k < 4; ++k) {  // rows 0-3 and 4-7 joined: k in the low lanes, k + 4 in the high
    r[k] = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[k + 4] = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}
#endif
