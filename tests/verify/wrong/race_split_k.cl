// WRONG on purpose: a data race. Split-K across work-groups with a barrier taken for a grid-wide
// one: the K-slice is the grid's last dimension (KS work-groups deep); each work-item owns an
// 8x8 tile of C, loads it from C (slice 0: beta*C), waits at a barrier "so that the previous
// slice has landed", adds its slice's products, and stores the tile back. But barrier() orders
// the work-items of one work-group only: work-groups of different slices read-modify-write the
// same elements of C, a shared accumulator in global memory, concurrently and unsynchronised;
// the later store wins and whole slices are lost, depending on the scheduling. Executed one
// work-group at a time, in order, it is exact.
// Caught by: `determinism` (a repeat of the same inputs fails) or, when the first run already
//   lost a slice, that run's `bound`, or `poison_read` when a work-group read C (poisoned at
//   beta = 0) before another wrote it. With `--tsan` (the OpenCL race worker: Oclgrind, see
//   docs/verification.md "Oclgrind"), also `race` on a seed that none of those caught: Oclgrind
//   names the read of C and the store of another work-group's slice, whatever the schedule.
//   build/kforge eval --problem gemm --lang opencl --source tests/verify/wrong/race_split_k.cl \
//     --params KS=8 --grid 'ceil_div(N,128),ceil_div(M,128),KS' --block 16,16,1 \
//     --size M=128,N=128,K=512 --tsan --json
__kernel void gemm(__global const float* A, __global const float* B, __global float* C,
                   int M, int N, int K, float alpha, float beta) {
  const int j0 = get_global_id(0) * 8, i0 = get_global_id(1) * 8;
  const int ks = get_group_id(2), nks = get_num_groups(2);
  const int k0 = K * ks / nks, k1 = K * (ks + 1) / nks;
  float acc[8][8];
  for (int di = 0; di < 8; ++di)
    for (int dj = 0; dj < 8; ++dj) {
      const int i = i0 + di, j = j0 + dj;
      const float c = i < M && j < N ? C[i * N + j] : 0.0f;
      acc[di][dj] = ks > 0 ? c : beta != 0.0f ? beta * c : 0.0f;
    }
  barrier(CLK_GLOBAL_MEM_FENCE);  // BUG: does not order work-groups
  for (int k = k0; k < k1; ++k)
    for (int di = 0; di < 8; ++di) {
      const float a = i0 + di < M ? alpha * A[(i0 + di) * K + k] : 0.0f;
      for (int dj = 0; dj < 8; ++dj)
        acc[di][dj] += a * (j0 + dj < N ? B[k * N + j0 + dj] : 0.0f);
    }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int di = 0; di < 8; ++di)
    for (int dj = 0; dj < 8; ++dj)
      if (i0 + di < M && j0 + dj < N) C[(i0 + di) * N + j0 + dj] = acc[di][dj];  // last wins
}
