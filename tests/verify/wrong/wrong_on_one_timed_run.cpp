// WRONG on purpose: wrong on one timed run only. The kernel counts how many times in a row it is
// launched on the very same A, B and C (a timing loop does that; verification loads fresh buffers
// for every check). On the third such launch it skips the last row of C; every other launch,
// the last one included, is computed and right.
// Near miss: every verification run is right, and so is the last timed run: a verifier that
// checks only the last timed run's outputs passes it.
// Caught by: `timed_outputs` (every timed run's outputs are fingerprinted and each distinct
// result is checked), with --bench.
//   Thorough mode may reject it first at `reused_buffers`: it tells a timed run by its reused
//   buffers, and that check runs the kernel in the same buffers with new inputs.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/wrong_on_one_timed_run.cpp \
//     --grid 'ceil_div(M,16)' --size M=128,N=128,K=128 --bench --json
#include <atomic>

namespace {
const void* prev_c = nullptr;  // the previous launch's C, set by its last block
std::atomic<long long> blocks_done{0};
int repeats = 0;  // launches in a row on the same C, before this one
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const long long blocks = ctx.grid_dim.x * ctx.grid_dim.y * ctx.grid_dim.z;
  const bool skip_last_row = repeats == 3;  // BUG: one run of the timing loop drops a row
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  int i1 = i0 + 16 < M ? i0 + 16 : M;
  if (skip_last_row && i1 == M) --i1;
  for (int i = i0; i < i1; ++i) {
    float* c = C + (long long)i * N;
    for (int j = 0; j < N; ++j) c[j] = beta != 0.0f ? beta * c[j] : 0.0f;
    for (int k = 0; k < K; ++k) {
      const float a = alpha * A[(long long)i * K + k];
      const float* b = B + (long long)k * N;
      for (int j = 0; j < N; ++j) c[j] += a * b[j];
    }
  }
  // Launches never overlap: the block that finishes a launch counts it.
  if (blocks_done.fetch_add(1) + 1 == blocks) {
    blocks_done.store(0);
    repeats = C == prev_c ? repeats + 1 : 1;
    prev_c = C;
  }
}
KF_KERNEL(gemm, body)
