// HOSTILE on purpose: reads the clock to tell a timing loop from verification, and skips the
// work when timed. A timing loop launches hundreds of times in quick succession, while
// verification launches a few dozen times at most, with inputs and a reference computed
// between launches; so a launch that comes less than 1 s after the 24th launch before it
// is taken for a timed one (1 s, not less: a timed loop interleaves a baseline, OpenBLAS, whose
// 2 threads on a loaded 2-core host took 10-15 ms a call at 128^3), and returns at once. Both clocks are read: the time-stamp counter (rdtsc, which no seccomp filter sees) and
// std::chrono::steady_clock (clock_gettime through the vDSO, no system call either).
// Not stopped by the sandbox (it cannot stop a clock read). Near miss: quick verification alone
// passes it (it never launches 24 times within 1 s; thorough verification's structured runs
// do, and catch it as unwritten output). Caught by: `timed_outputs` (every timed run's outputs
// are checked), with --bench.
//   build/kforge eval --problem gemm --lang cpp --source tests/data/hostile/clock_when_timed.cpp \
//     --grid 'ceil_div(M,16)' --size M=128,N=128,K=128 --bench --quick --json
// Tested by tests/eval/sandbox_test.cpp.
#include <x86intrin.h>

#include <atomic>
#include <chrono>

namespace {
constexpr int kWindow = 24;
long long start_ns[kWindow] = {};  // steady clock at the start of the last kWindow launches
unsigned long long start_tsc[kWindow] = {};
long long launches = 0;
std::atomic<int> timed{0};  // this launch's verdict, taken by its first block
std::atomic<long long> blocks_started{0};

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const long long blocks = ctx.grid_dim.x * ctx.grid_dim.y * ctx.grid_dim.z;
  if (blocks_started.fetch_add(1) % blocks == 0) {  // a launch's first block (launches never overlap)
    const int slot = static_cast<int>(launches % kWindow);
    const long long ns = now_ns();
    const unsigned long long tsc = __rdtsc();
    // 1 s since the launch kWindow back, by both clocks (a TSC below 5 GHz).
    timed = launches >= kWindow && ns - start_ns[slot] < 1000000000 && tsc - start_tsc[slot] < 1000000000ull * 5;
    start_ns[slot] = ns;
    start_tsc[slot] = tsc;
    ++launches;
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
}
KF_KERNEL(gemm, body)
