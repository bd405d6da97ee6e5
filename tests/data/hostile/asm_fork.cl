// HOSTILE on purpose: OpenCL C on PoCL runs on the host CPU and takes inline assembly, so a
// kernel can make any system call; this one forks (x86-64 only: elsewhere it does nothing), and
// the child exits at once, so that with --no-sandbox it stays harmless.
// Stopped by: the sandbox (fork), as for cpu code (kforge-worker filters opencl too).
//   build/kforge eval --problem gemm --lang opencl --source tests/data/hostile/asm_fork.cl \
//     --grid M --block 1 --size M=64,N=64,K=64 --json
// Tested by tests/eval/sandbox_test.cpp.
__kernel void gemm(__global const float* A, __global const float* B, __global float* C, int M, int N,
                   int K, float alpha, float beta) {
#if defined(__x86_64__)
  if (get_global_id(0) == 0) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(57L) : "rcx", "r11", "memory");  // fork
    if (ret == 0) __asm__ volatile("syscall" : : "a"(60L), "D"(0L) : "rcx", "r11", "memory");  // the child: exit
  }
#endif
  // An honest GEMM for the rest: the hostile act is all that may stop it.
  const int i = get_global_id(0);
  if (i >= M) return;
  for (int j = 0; j < N; ++j) {
    float s = 0.0f;
    for (int k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
    C[i * N + j] = beta != 0.0f ? alpha * s + beta * C[i * N + j] : alpha * s;
  }
}
