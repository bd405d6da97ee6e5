// WRONG on purpose: right when checked, wrong when timed. The kernel remembers the buffers of
// its previous launch; called again on the very same A, B and C (what a timing loop does, and
// what a verifier that loads fresh buffers for every check never does) it assumes "nothing
// changed" and returns at once, leaving C as the caller set it.
// Near miss: every verification run is computed, and right.
// Caught by: `timed_outputs` (every timed run's outputs are checked), with --bench.
//   Thorough mode may reject it first at `reused_buffers`: it tells a timed run by its reused
//   buffers, and that check runs the kernel in the same buffers with new inputs.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/lazy_when_timed.cpp \
//     --grid 'ceil_div(M,16)' --size M=128,N=128,K=128 --bench --json
#include <atomic>

namespace {
const void* prev_a = nullptr;  // the previous launch's buffers, set by its last block
const void* prev_b = nullptr;
const void* prev_c = nullptr;
std::atomic<long long> blocks_done{0};
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const long long blocks = ctx.grid_dim.x * ctx.grid_dim.y * ctx.grid_dim.z;
  const bool again = A == prev_a && B == prev_b && C == prev_c;  // BUG: "same buffers, same answer"
  if (!again) {
    const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
    const int i1 = i0 + 16 < M ? i0 + 16 : M;
    for (int i = i0; i < i1; ++i) {
      float* c = C + (long long)i * N;
      for (int j = 0; j < N; ++j) c[j] = beta != 0.0f ? beta * c[j] : 0.0f;
      for (int k = 0; k < K; ++k) {
        const float a = alpha * A[(long long)i * K + k];
        const float* b = B + (long long)k * N;
        for (int j = 0; j < N; ++j) c[j] += a * b[j];
      }
    }
  }
  // Launches never overlap: the block that finishes a launch records its buffers.
  if (blocks_done.fetch_add(1) + 1 == blocks) {
    blocks_done.store(0);
    prev_a = A, prev_b = B, prev_c = C;
  }
}
KF_KERNEL(gemm, body)
