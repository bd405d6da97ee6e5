// WRONG on purpose: a data race. Split-K over two blocks per row band, added into C with a plain,
// unsynchronized +=: grid (ceil_div(M,16), 2); the block of slice 0 stores C = alpha*A0*B0 +
// beta*C for its 16 rows, the block of slice 1 then does C += alpha*A1*B1 (a load, an add and a
// store per element). Right only when slice 0's store lands before slice 1 reads. The pool
// hands out all slice-0 blocks first (slice is the slower grid dimension), so in the ordinary
// schedule slice 1 of a row band almost always starts after slice 0 of it has finished, and the
// race rarely shows; when the blocks overlap, slice 1 reads the poison (NaN) or a C that slice 0
// then overwrites, and a slice is lost.
// Caught by: `determinism` (a repeat under another schedule: more threads than cores, blocks
//   started in a shuffled order) or, when a run already overlapped, that run's `bound`,
//   `poison` or `finite`.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/race_two_block_add.cpp \
//     --grid 'ceil_div(M,16),2' --size M=128,N=128,K=256 --json
#include <vector>

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  const int slice = static_cast<int>(ctx.block_idx.y);
  const int k0 = slice == 0 ? 0 : K / 2, k1 = slice == 0 ? K / 2 : K;
  std::vector<float> part((std::size_t)(i1 - i0) * N, 0.0f);  // (16,N) this slice's products
  for (int i = i0; i < i1; ++i)
    for (int k = k0; k < k1; ++k) {
      const float a = alpha * A[(long long)i * K + k];
      float* p = part.data() + (std::size_t)(i - i0) * N;
      for (int j = 0; j < N; ++j) p[j] += a * B[(long long)k * N + j];
    }
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float* c = C + (long long)i * N + j;
      const float p = part[(std::size_t)(i - i0) * N + j];
      if (slice == 0) *c = p + (beta != 0.0f ? beta * *c : 0.0f);
      else *c += p;  // BUG: assumes slice 0 has already stored this element
    }
}
KF_KERNEL(gemm, body)
