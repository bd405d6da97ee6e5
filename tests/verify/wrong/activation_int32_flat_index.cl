// WRONG on purpose: activation.relu (Y = max(X + bias, 0), X and Y (M,N)) in OpenCL with the flat
// index in 32-bit `int` (e = row * N + j), as a kernel written for small tensors has it. Every
// shape whose tensors stay below 2^31 elements gets the right answer, so every random,
// structured and fuzzed trial passes it. The library's kernels/activation/activation.cl keeps
// the row in a `long` and passes the same check. The cpu twin is activation_int32_flat_index.cpp.
// Caught by: `index_width` (thorough mode, on an OpenCL device that works in the host's memory,
//   such as PoCL; bf16 or fp16, since PoCL's largest buffer is 8 GiB and Y in fp32 is a little
//   more): X and Y at M = 2^16 + 1, N = 2^15; row 2^16 starts at flat index 2^31, where
//   row * N + j wraps to -2^31, so the kernel reads X and writes Y 4 GiB before their start: the
//   worker faults in the index_width run (crashed, failed_check index_width), or, where
//   something is mapped there, the last row of Y is never written (incorrect, index_width,
//   poison). A GPU with memory of its own skips the check, saying why. Quick mode passes it.
//   build/kforge eval --problem activation.relu --lang opencl --entry relu --dtype bf16 \
//     --source tests/verify/wrong/activation_int32_flat_index.cl --grid 'ceil_div(N,64),M' --block 64 --json
typedef kf_storage T;

__kernel void relu(__global const T* X, __global const T* B, __global T* Y, int M, int N, float with_bias) {
  const int j = get_global_id(0);
  if (j >= N) return;
  const int e = (int)get_group_id(1) * N + j;  // BUG: the flat index in 32 bits
  float z = kf_load(X + e);
  if (with_bias != 0.0f) z += kf_load(B + j);
  kf_store(z > 0.0f ? z : 0.0f, Y + e);
}
