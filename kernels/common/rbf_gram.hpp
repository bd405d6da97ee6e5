#pragma once
// The RBF Gram matrix K_ij = exp(-gamma |x_i - x_j|^2) into K (row-major, N x N) for the cpu
// kernel models (kernel_model/kernel_logreg.cpp and kernel_svm_smo.cpp), in tiles of TI rows x TJ
// columns: X transposed once so that a row's squared distances to a tile are contiguous vectors,
// then the prelude's vector exp over them. d2 is summed over d in the same order for (i, j) and
// (j, i), so K is exactly symmetric (the SMO kernel reads row j as column j).
// Returns K's largest row sum (K >= 0: Gershgorin's bound on its largest eigenvalue).
// Needs the cpu prelude (kf_vf, kf_load, kf_exp) and the kernel's TI and TJ.
#include <stdlib.h>

static float rbf_gram(const kf_storage* X, float* K, int N, int D, float gamma) {
  float* xt = (float*)malloc(sizeof(float) * ((size_t)D * N + TJ));
  float* d2 = xt + (size_t)D * N;
  for (int j = 0; j < N; ++j)
    for (int d = 0; d < D; ++d) xt[(size_t)d * N + j] = X[(size_t)j * D + d];
  for (int i0 = 0; i0 < N; i0 += TI)
    for (int j0 = 0; j0 < N; j0 += TJ) {
      const int ni = N - i0 < TI ? N - i0 : TI, nj = N - j0 < TJ ? N - j0 : TJ;
      for (int i = i0; i < i0 + ni; ++i) {
        for (int j = 0; j < nj; ++j) d2[j] = 0.0f;
        for (int d = 0; d < D; ++d) {
          const float xi = X[(size_t)i * D + d];
          const float* col = xt + (size_t)d * N + j0;
          for (int j = 0; j < nj; ++j) d2[j] += (xi - col[j]) * (xi - col[j]);
        }
        float* row = K + (size_t)i * N + j0;
        int j = 0;
        for (; j + KF_VW <= nj; j += KF_VW) kf_store(row + j, kf_exp(kf_load(d2 + j) * -gamma));
        if (j < nj) kf_store_part(row + j, nj - j, kf_exp(kf_load_part(d2 + j, nj - j, 0.0f) * -gamma));
      }
    }
  free(xt);
  float smax = 0.0f;
  for (int i = 0; i < N; ++i) {
    float s = 0.0f;
    for (int j = 0; j < N; ++j) s += K[(size_t)i * N + j];
    smax = s > smax ? s : smax;
  }
  return smax;
}
