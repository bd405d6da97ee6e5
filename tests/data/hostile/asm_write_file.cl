// HOSTILE on purpose: OpenCL C on PoCL runs on the host CPU and takes inline assembly; this
// kernel opens a file for writing and writes to it with raw system calls (x86-64 only).
// Stopped by: the sandbox (open with O_CREAT). With --no-sandbox the file is written.
//   build/kforge eval --problem gemm --lang opencl --source tests/data/hostile/asm_write_file.cl \
//     --grid M --block 1 --size M=64,N=64,K=64 --json
// Tested by tests/eval/sandbox_test.cpp.
__constant char kPath[] = "/tmp/kforge-hostile-asm-write.txt";
__constant char kText[] = "hostile\n";

__kernel void gemm(__global const float* A, __global const float* B, __global float* C, int M, int N,
                   int K, float alpha, float beta) {
#if defined(__x86_64__)
  if (get_global_id(0) == 0) {
    long fd, ret;
    __asm__ volatile("syscall" : "=a"(fd) : "a"(2L), "D"(kPath), "S"(0x241L), "d"(0644L)
                     : "rcx", "r11", "memory");  // open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)
    if (fd >= 0) {
      __asm__ volatile("syscall" : "=a"(ret) : "a"(1L), "D"(fd), "S"(kText), "d"(8L) : "rcx", "r11", "memory");
      __asm__ volatile("syscall" : "=a"(ret) : "a"(3L), "D"(fd) : "rcx", "r11", "memory");  // close
    }
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
