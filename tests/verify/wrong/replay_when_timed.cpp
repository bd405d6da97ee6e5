// WRONG on purpose: a cheat that only the speed-of-light check sees. The kernel remembers the
// buffers of its previous launch and a copy of the C it produced; called again on the very same
// A, B and C (what a timing loop does, after putting C back) it copies the saved answer instead
// of computing. The answer is even right, since the inputs did not change: only the time is a
// lie (a memcpy of C, many times faster than the machine can do the GEMM's arithmetic).
// Near miss: every verification run is computed and right, and so is every timed run's output.
// Caught by: `speed_of_light` (disposition suspect), with --bench.
//   Thorough mode may reject it first at `reused_buffers`: it tells a timed run by its reused
//   buffers, and that check runs the kernel in the same buffers with new inputs.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/replay_when_timed.cpp \
//     --grid 'ceil_div(M,16)' --size M=512,N=512,K=512 --bench --json
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

namespace {
const void* prev_a = nullptr;  // the previous launch's buffers, set by its last block
const void* prev_b = nullptr;
const void* prev_c = nullptr;
std::atomic<long long> blocks_done{0};
std::mutex saved_mutex;
std::vector<float> saved;  // (M,N) the previous launch's C
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const long long blocks = ctx.grid_dim.x * ctx.grid_dim.y * ctx.grid_dim.z;
  const bool again = A == prev_a && B == prev_b && C == prev_c;  // BUG: "same buffers, same answer"
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  const std::size_t row0 = (std::size_t)i0 * N, count = (std::size_t)(i1 - i0) * N;
  if (again) {
    std::memcpy(C + row0, saved.data() + row0, count * sizeof(float));
  } else {
    for (int i = i0; i < i1; ++i) {
      float* c = C + (long long)i * N;
      for (int j = 0; j < N; ++j) c[j] = beta != 0.0f ? beta * c[j] : 0.0f;
      for (int k = 0; k < K; ++k) {
        const float a = alpha * A[(long long)i * K + k];
        const float* b = B + (long long)k * N;
        for (int j = 0; j < N; ++j) c[j] += a * b[j];
      }
    }
    std::lock_guard<std::mutex> lock(saved_mutex);
    if (saved.size() < (std::size_t)M * N) saved.resize((std::size_t)M * N);
    std::memcpy(saved.data() + row0, C + row0, count * sizeof(float));
  }
  if (blocks_done.fetch_add(1) + 1 == blocks) {
    blocks_done.store(0);
    prev_a = A, prev_b = B, prev_c = C;
  }
}
KF_KERNEL(gemm, body)
