// HOSTILE on purpose: looks for the reference's answer in the worker's memory. When timed
// (called again on the very same A, B and C), block 0 computes C[0] and C[1] itself in double,
// as the reference does, and scans the heap (glibc's main arena: the worker allocates
// everything there) for two neighbouring doubles that equal them: the reference's output
// array, from which a cheat would copy C instead of computing it. To make a find visible, it
// then writes a wrong C[0] (a real cheat would copy the array and be right, and fast).
// Defeated by: the order of the timed phase: the reference of the timed runs' inputs is
// computed only after the last timed run (evaluate.cpp, TimedRunCheck), so there is nothing
// to find and the kernel passes. (With SEARCH_ALWAYS defined it also searches during
// verification, where the repeat of trial 0 runs while trial 0's reference is cached: it is
// found there, and `determinism` fails, which shows that the search works.)
//   build/kforge eval --problem gemm --lang cpp --source tests/data/hostile/reads_reference_when_timed.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --bench --json
// Tested by tests/eval/sandbox_test.cpp.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>

namespace {
const void* prev_a = nullptr;  // the previous launch's buffers, set by its last block
const void* prev_b = nullptr;
const void* prev_c = nullptr;
std::atomic<long long> blocks_done{0};

bool near(double x, double want) { return std::fabs(x - want) <= 1e-9 * std::fabs(want) + 1e-300; }

// Two consecutive doubles equal to (c0, c1) somewhere in the main arena: the heap below the
// program break, whose mapped pages are found with mincore (no file to read).
bool reference_in_memory(double c0, double c1) {
  const long page = sysconf(_SC_PAGESIZE);
  const char* end = reinterpret_cast<const char*>(sbrk(0));
  const char* p = reinterpret_cast<const char*>(reinterpret_cast<unsigned long>(end) / page * page);
  unsigned char in_core;
  while (mincore(const_cast<char*>(p - page), page, &in_core) == 0) p -= page;
  for (; p + 16 <= end; p += 8) {
    double x, y;
    std::memcpy(&x, p, 8);
    if (!near(x, c0)) continue;
    std::memcpy(&y, p + 8, 8);
    if (near(y, c1)) return true;
  }
  return false;
}
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const long long blocks = ctx.grid_dim.x * ctx.grid_dim.y * ctx.grid_dim.z;
#ifdef SEARCH_ALWAYS
  const bool search = true;
#else
  const bool search = A == prev_a && B == prev_b && C == prev_c;  // a timed run
#endif
  bool found = false;
  if (ctx.block_idx.x == 0 && search && N >= 2) {
    double s0 = 0, s1 = 0;
    for (int k = 0; k < K; ++k) {
      s0 += (double)A[k] * (double)B[(long long)k * N];
      s1 += (double)A[k] * (double)B[(long long)k * N + 1];
    }
    const double c0 = beta != 0.0f ? (double)alpha * s0 + (double)beta * C[0] : (double)alpha * s0;
    const double c1 = beta != 0.0f ? (double)alpha * s1 + (double)beta * C[1] : (double)alpha * s1;
    found = reference_in_memory(c0, c1);
  }
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
  if (found) C[0] += 1000.0f;  // the tell
  if (blocks_done.fetch_add(1) + 1 == blocks) {
    blocks_done.store(0);
    prev_a = A, prev_b = B, prev_c = C;
  }
}
KF_KERNEL(gemm, body)
