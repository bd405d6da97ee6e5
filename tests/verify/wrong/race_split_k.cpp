// WRONG on purpose: a data race. Split-K written as if blocks ran one after another: the grid
// has KS blocks, block ks owns the K-slice [ks*K/KS, (ks+1)*K/KS) for the whole of C, and each
// block reads C into a private copy at its start, adds its slice's products and writes the copy
// back at its end (block 0 starts from beta*C). Run in grid order, one block at a time, it is
// exact. On a thread pool, blocks that overlap in time read the same C and the later write
// wins: whole slices are lost, and which ones depends on the scheduling.
// Caught by: `determinism` (a repeat of the same inputs fails) or, when the first run already
//   lost a slice, that run's `bound`, or `poison_read` when a block read C (poisoned at
//   beta = 0) before block 0 wrote it.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/race_split_k.cpp \
//     --params KS=8 --grid KS --size M=128,N=128,K=512 --threads 4 --json
#include <vector>

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int ks = static_cast<int>(ctx.block_idx.x), nks = static_cast<int>(ctx.grid_dim.x);
  const int k0 = (int)((long long)K * ks / nks), k1 = (int)((long long)K * (ks + 1) / nks);
  const long long MN = (long long)M * N;
  std::vector<float> acc(MN);  // BUG: a private copy of a C that other blocks update meanwhile
  for (long long e = 0; e < MN; ++e)
    acc[e] = ks > 0 ? C[e] : beta != 0.0f ? beta * C[e] : 0.0f;
  for (int i = 0; i < M; ++i)
    for (int k = k0; k < k1; ++k) {
      const float a = alpha * A[(long long)i * K + k];
      const float* b = B + (long long)k * N;
      float* c = acc.data() + (long long)i * N;
      for (int j = 0; j < N; ++j) c[j] += a * b[j];
    }
  for (long long e = 0; e < MN; ++e) C[e] = acc[e];  // the last writer wins
}
KF_KERNEL(gemm, body)
