// WRONG on purpose: a data race that no output shows. A table every block uses is filled
// lazily by the first block that finds it empty, guarded by a plain `bool` (no atomic, no
// lock, no call_once): several blocks may find it false at once and fill it together, and every
// block reads the flag while another may be writing it. That is undefined behaviour in C++ (a
// compiler may cache the flag, tear the table's stores, or reorder the flag before the table),
// though on x86 with this compiler each block still ends up reading 1.0f, so every output is
// right under every schedule: determinism repeats, poison and bounds all pass.
// Caught by: `race` (ThreadSanitizer: `--tsan` in `kforge eval`, `verify`, `tune`, `agent`,
//   and the MCP evaluate/bench calls), and by nothing else.
//   build/kforge eval --problem gemm --lang cpp --source tests/verify/wrong/race_lazy_init.cpp \
//     --grid 'ceil_div(M,16)' --size M=64,N=48,K=40 --no-index-width --tsan --json
static float g_unit[16];     // 1.0f in every lane once filled
static bool g_ready = false;  // BUG: a plain flag shared by all blocks

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  if (!g_ready) {  // the race: read here by one block while another writes it below
    for (int l = 0; l < 16; ++l) g_unit[l] = 1.0f;
    g_ready = true;
  }
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[(long long)i * K + k] * B[(long long)k * N + j];
      const long long e = (long long)i * N + j;
      const float scaled = alpha * s * g_unit[j % 16];
      C[e] = beta != 0.0f ? scaled + beta * C[e] : scaled;
    }
}
KF_KERNEL(gemm, body)
