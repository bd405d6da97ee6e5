// WRONG on purpose: a launch that depends on the previous launch. The kernel accumulates into
// a persistent fp32 workspace (one float per element of C, kept between launches to "save the
// allocation") and zeroes it only when it sees a new problem configuration (M, N, K, alpha,
// beta), like a split-K workspace that each launch must find zeroed, but whose reset at the end
// of a launch was forgotten. The first launch of any configuration is right; a second launch of
// the same configuration adds its sums on top of the first one's.
// Near miss: right whenever consecutive calls differ in shape or scalars (kforge's first trials
//   alternate the scalars), so a check made of single runs passes it.
// Caught by: `determinism` (trial 0's inputs run again give a different, wrong C), or `bound`
//   where a later trial repeats the previous configuration.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/stale_workspace.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
#include <mutex>
#include <tuple>
#include <vector>

namespace {
std::mutex ws_mutex;
std::vector<float> ws;  // (M,N) running sums, persistent
std::tuple<int, int, int, float, float> ws_key{-1, -1, -1, 0.0f, 0.0f};
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  {
    std::lock_guard<std::mutex> lock(ws_mutex);
    const std::tuple<int, int, int, float, float> key{M, N, K, alpha, beta};
    if (key != ws_key) {  // BUG: the only reset; a repeated configuration finds old sums
      ws.assign((std::size_t)M * N, 0.0f);
      ws_key = key;
    }
  }
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      const long long e = (long long)i * N + j;
      float s = ws[e];
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      ws[e] = s;
      C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
    }
}
KF_KERNEL(gemm, body)
