// The baseline of examples.gemm: OpenBLAS's sgemm on fp32 copies, on the kernel's thread count.
#include <cblas.h>

void gemm_openblas(float* A, float* B, float* C, int M, int N, int K, float alpha, float beta,
                   int threads) {
  openblas_set_num_threads(threads);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, alpha, A, K, B, N, beta, C, N);
}
