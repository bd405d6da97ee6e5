// HOSTILE on purpose: a kernel for the problem file examples/problems/gemm.json that looks for
// the problem's reference in its own process to take the right answer from it instead of
// computing it. It walks the objects loaded in the process (dl_iterate_phdr: no system call),
// finds the one exporting the reference's entry point `kforge_reference` (the adapter's name,
// file_problem.cpp) by dlopen(RTLD_NOLOAD) of an object already loaded (no file is opened),
// and calls it. To make a find visible it then writes a wrong C[0] (a real cheat would be
// right); when it finds nothing it computes C itself, correctly.
// Defeated by: the native host (src/problem/native_host.hpp): a sandboxed worker never loads
// the reference, which runs in a process of its own, so the kernel passes. With --no-sandbox
// the worker loads the reference at its first use (after trial 0's launch), the kernel finds it
// in a later trial and fails at C[0].
//   build/kforge eval --problem examples/problems/gemm.json --entry gemm --lang cpp \
//     --source tests/data/hostile/calls_reference.cpp --grid 'ceil_div(M,16)' --size M=64,N=64,K=64
// Tested by tests/eval/sandbox_test.cpp.
#include <dlfcn.h>
#include <link.h>

#include <vector>

namespace {
using ReferenceFn = void (*)(double* const*, const long long*, const double*);

int find(struct dl_phdr_info* info, size_t, void* out) {
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  void* handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return 0;
  void* fn = dlsym(handle, "kforge_reference");
  if (!fn) return 0;
  *static_cast<void**>(out) = fn;
  return 1;
}
}  // namespace

static void body(const kf_ctx& ctx, const float* A, const float* B, float* C,  // (M,K) (K,N) (M,N)
                 int M, int N, int K, float alpha, float beta) {
  void* fn = nullptr;
  if (ctx.block_idx.x == 0) dl_iterate_phdr(find, &fn);
  if (fn) {  // block 0 answers for all, from the reference, and shows it
    std::vector<double> a(A, A + (long long)M * K), b(B, B + (long long)K * N), c(C, C + (long long)M * N),
        magnitude((long long)M * N);
    double* t[] = {a.data(), b.data(), c.data(), magnitude.data()};
    const long long sizes[] = {M, N, K};
    const double scalars[] = {alpha, beta};
    reinterpret_cast<ReferenceFn>(fn)(t, sizes, scalars);
    for (long long e = 0; e < (long long)M * N; ++e) C[e] = static_cast<float>(c[e]);
    C[0] += 1000.0f;  // the tell
    return;
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
}
KF_KERNEL(gemm, body)
