// WRONG on purpose: caches its result keyed by the output pointer. The first launch that sees
// a given C (with the same sizes and scalars) computes it and keeps a copy; a later launch
// with the same C pointer copies the kept result back without looking at A or B, as a "layer
// that recomputes only when its output buffer changes" would. Every fresh trial at fresh
// addresses is right, and so is every exact repeat.
// Caught by: `reused_buffers` (new inputs in the very buffers of the previous run get the old
//   answer); `bound` instead when the allocator happens to hand back an address an earlier
//   trial used.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/cache_by_output_pointer.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace {
// BUG: C's address (and the block's first row), not the inputs
using Key = std::tuple<const float*, int, int, int, int, float, float>;
std::mutex cache_mutex;
std::map<Key, std::vector<float>> cache;  // (16,N) the block's rows of the answer kept for that C
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  const Key key{C, i0, M, N, K, alpha, beta};
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {  // "seen this output: nothing changed"
      std::memcpy(C + (long long)i0 * N, it->second.data(), sizeof(float) * it->second.size());
      return;
    }
  }
  std::vector<float> rows((std::size_t)(i1 - i0) * N);
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      float* c = C + (long long)i * N + j;
      *c = alpha * s + (beta != 0.0f ? beta * *c : 0.0f);
      rows[(std::size_t)(i - i0) * N + j] = *c;
    }
  std::lock_guard<std::mutex> lock(cache_mutex);
  cache[key] = std::move(rows);
}
KF_KERNEL(gemm, body)
