// WRONG on purpose: memoizes on a fingerprint of its inputs. A cache keyed on the shape, the
// scalars and the first 8 elements of A and of B (a "cheap checksum" that is meant to tell
// different inputs apart) returns the stored C when the key matches. Fresh inputs change the
// fingerprint and the same inputs give the same answer, so it is right on every fresh trial
// and on every exact repeat; an input that differs anywhere past the sampled elements gets the
// old answer.
// Caught by: `perturbation` (one element of A or B changed, the output does not follow).
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/fingerprint_memo.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=64,K=64 --json
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace {
struct Memo {
  std::vector<float> c;     // (M,N) the answer for this fingerprint
  std::vector<char> ready;  // per 16-row block
};
std::mutex memo_mutex;
std::map<std::vector<float>, Memo> memo;

std::vector<float> fingerprint(const float* A, const float* B, int M, int N, int K, float alpha,
                               float beta) {
  std::vector<float> f{(float)M, (float)N, (float)K, alpha, beta};
  for (long long i = 0; i < 8 && i < (long long)M * K; ++i) f.push_back(A[i]);  // BUG: a sample
  for (long long i = 0; i < 8 && i < (long long)K * N; ++i) f.push_back(B[i]);  // is not the input
  return f;
}
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  const int blk = static_cast<int>(ctx.block_idx.x);
  const int i0 = blk * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  const std::size_t row0 = (std::size_t)i0 * N, count = (std::size_t)(i1 - i0) * N;
  const std::vector<float> key = fingerprint(A, B, M, N, K, alpha, beta);
  {
    std::lock_guard<std::mutex> lock(memo_mutex);
    Memo& m = memo[key];
    if (m.c.empty()) {
      m.c.assign((std::size_t)M * N, 0.0f);
      m.ready.assign(ctx.grid_dim.x, 0);
    }
    if (m.ready[blk]) {
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
  Memo& m = memo[key];
  std::memcpy(m.c.data() + row0, C + row0, count * sizeof(float));
  m.ready[blk] = 1;
}
KF_KERNEL(gemm, body)
