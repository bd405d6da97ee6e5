// WRONG on purpose: stale-result replay. A static cache keyed on the problem's shape and
// scalars (M, N, K, alpha, beta) keeps the first call's C and copies it out on every later
// call with the same key, whatever the inputs now hold ("the tuner calls us again and again
// on the same problem: cache the answer"). Every first call at a key is computed and right.
// Near miss: a check that runs once per shape, or re-runs only the identical inputs, passes it.
// Caught by: `bound` when a later trial with the same shape and scalars brings fresh inputs,
//   or `perturbation` (one input element changed, the output does not follow).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/stale_replay.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace {
struct Memo {
  std::vector<float> c;     // (M,N) the first answer
  std::vector<char> ready;  // per 16-row block
};
std::mutex memo_mutex;
std::map<std::tuple<int, int, int, float, float>, Memo> memo;  // BUG: keyed on shape, not inputs
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int blk = static_cast<int>(ctx.block_idx.x);
  const int i0 = blk * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  const std::size_t row0 = (std::size_t)i0 * N, count = (std::size_t)(i1 - i0) * N;
  {
    std::lock_guard<std::mutex> lock(memo_mutex);
    Memo& m = memo[{M, N, K, alpha, beta}];
    if (m.c.empty()) {
      m.c.assign((std::size_t)M * N, 0.0f);
      m.ready.assign(ctx.grid_dim.x, 0);
    }
    if (m.ready[blk]) {  // seen before: replay
      std::memcpy(C + row0, m.c.data() + row0, count * sizeof(float));
      return;
    }
  }
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
  std::lock_guard<std::mutex> lock(memo_mutex);
  Memo& m = memo[{M, N, K, alpha, beta}];
  std::memcpy(m.c.data() + row0, C + row0, count * sizeof(float));
  m.ready[blk] = 1;
}
KF_KERNEL(gemm, body)
