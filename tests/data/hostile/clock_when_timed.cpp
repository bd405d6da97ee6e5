// HOSTILE on purpose: reads the clock to tell a timing loop from verification, and skips the
// work when timed. A timing loop launches in quick succession (the outputs put back, perhaps a
// baseline run between two), while verification computes inputs and a reference between
// launches; so once three launches in a row started less than 1.5 ms after the previous one
// ended, the launch is taken for a timed one and returns at once. Both clocks are read: the time-stamp counter (rdtsc, which no seccomp filter sees) and
// std::chrono::steady_clock (clock_gettime through the vDSO, no system call either).
// Not stopped by the sandbox (it cannot stop a clock read); caught by: `timed_outputs` (every
// timed run's outputs are checked), or by verification if a verification launch looks timed.
//   build/kforge eval --problem gemm --lang cpp --source tests/data/hostile/clock_when_timed.cpp \
//     --grid 'ceil_div(M,16)' --size M=128,N=128,K=128 --bench --json
// Tested by tests/eval/sandbox_test.cpp.
#include <x86intrin.h>

#include <atomic>
#include <chrono>

namespace {
std::atomic<long long> last_end_ns{0};  // steady clock at the end of the previous launch
std::atomic<unsigned long long> last_end_tsc{0};
std::atomic<long long> blocks_done{0};
std::atomic<int> timed{0};  // this launch's verdict, taken by its first block
std::atomic<long long> blocks_started{0};
int quick_in_a_row = 0;

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const long long blocks = ctx.grid_dim.x * ctx.grid_dim.y * ctx.grid_dim.z;
  if (blocks_started.fetch_add(1) % blocks == 0) {
    const long long gap = now_ns() - last_end_ns.load();
    const unsigned long long gap_tsc = __rdtsc() - last_end_tsc.load();
    const bool quick = last_end_ns.load() != 0 && gap < 1500000 && gap_tsc < 1500000ull * 5;  // TSC < 5 GHz
    quick_in_a_row = quick ? quick_in_a_row + 1 : 0;
    timed = quick_in_a_row >= 3;
  }
  if (!timed) {
    const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
    const int i1 = i0 + 16 < M ? i0 + 16 : M;
    for (int i = i0; i < i1; ++i)
      for (int j = 0; j < N; ++j) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
        const long long e = (long long)i * N + j;
        C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
      }
  }
  if (blocks_done.fetch_add(1) + 1 == blocks) {  // the launch's last block
    blocks_done = 0;
    last_end_ns = now_ns();
    last_end_tsc = __rdtsc();
  }
}
KF_KERNEL(gemm, body)
