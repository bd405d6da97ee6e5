// WRONG on purpose: a data race in local memory. A textbook tiled GEMM (16x16 work-groups, one
// 16x16 tile of A and of B staged in local memory per step of K) with the barrier between
// loading a tile and computing on it removed: a work-item may read a tile element before the
// work-item that loads it has stored it, and gets the previous step's value (or, at the first
// step, whatever local memory held). The barrier after computing is kept, so a step's loads do
// not overwrite a tile that others still read. Whether it shows depends on how the driver runs
// the work-items of a group (PoCL runs them as loops, in lockstep vectors or one after another;
// a GPU runs warps in any order).
// Caught by: `race`, from the OpenCL race worker (`--tsan`: Oclgrind's simulated device with
//   data-race detection, docs/verification.md "Oclgrind"), which names the tile's store and the
//   inner loop's load by work-item and line. Without it, never caught on PoCL: PoCL's kernel
//   compiler adds a barrier at the start of the uniform inner loop itself (ImplicitLoopBarriers),
//   which is the missing one, so every seed computes the right answer (docs/verification.md,
//   "Races"). Needs Oclgrind (Debian: oclgrind, in tools/install-deps).
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/tiled_no_load_barrier.cl \
//     --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=64,N=64,K=64 --tsan --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  __local float As[16][16], Bs[16][16];  // (16,16) tiles of A and B
  const int tj = get_local_id(0), ti = get_local_id(1);
  const int j = get_group_id(0) * 16 + tj, i = get_group_id(1) * 16 + ti;
  float s = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    As[ti][tj] = i < M && k0 + tj < K ? A[i * K + k0 + tj] : 0.0f;
    Bs[ti][tj] = k0 + ti < K && j < N ? B[(k0 + ti) * N + j] : 0.0f;
    // BUG: barrier(CLK_LOCAL_MEM_FENCE) missing here: the tile is read before all of it landed
    for (int k = 0; k < 16; ++k) s += As[ti][k] * Bs[k][tj];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i >= M || j >= N) return;
  const int e = i * N + j;
  C[e] = beta != 0.0f ? alpha * s + beta * C[e] : alpha * s;
}
