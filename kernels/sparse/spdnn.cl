// spdnn for the opencl backend: the whole network in one launch (spdnn_problem.cpp has the math,
// spdnn.cpp the why). Work-group (WX, WY): WY input rows carried through all L layers, WX
// work-items across the neurons (work-item lx computes neurons lx, lx + WX, ...: neighbouring
// work-items read neighbouring connection lists, coalesced).
//
// Two activation buffers per row: one in local memory (NMAX floats a row) and the row of the
// output Y itself (global; written before it is read). The layers alternate between them so that
// the last layer lands in Y: layer l writes Y when (L - 1 - l) is even, local memory otherwise;
// layer 0 reads Y0. A barrier between layers (local and global fence: both buffers are shared by
// the work-group). The category: an atomic_or per row in local memory after the last layer.
//
// Parameters (#defines): WX work-items along neurons, WY rows per work-group, NMAX the local
// buffer's floats per row (N <= NMAX: the spec's constraint).

// One layer: every neuron j of this work-item, from SRC (a row of N floats) into DST.
#define SPDNN_LAYER(SRC, DST)                                                         \
  for (int j = lx; j < N; j += WX) {                                                  \
    float acc = b[j];                                                                 \
    for (int t = 0; t < K; ++t) acc += wv[(long)j * K + t] * SRC[wi[(long)j * K + t]]; \
    DST[j] = fmin(fmax(acc, 0.0f), 32.0f);                                             \
  }

__kernel void spdnn(__global const float* Y0, __global const int* W_idx, __global const float* W_val,
                    __global const float* bias, __global float* Y, __global float* cat, int B, int N, int K,
                    int L) {
  __local float act[WY * NMAX];
  __local int alive[WY];
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int r = get_group_id(1) * WY + ly;
  const int live = r < B;  // rows past B still reach every barrier
  __local float* loc = act + ly * NMAX;
  __global const float* y0 = Y0 + (long)(live ? r : 0) * N;
  __global float* y = Y + (long)(live ? r : 0) * N;
  for (int l = 0; l < L; ++l) {
    __global const int* wi = W_idx + (long)l * N * K;
    __global const float* wv = W_val + (long)l * N * K;
    __global const float* b = bias + (long)l * N;
    const int to_y = (L - 1 - l) % 2 == 0;
    if (live) {
      if (l == 0 && to_y) {
        SPDNN_LAYER(y0, y)
      } else if (l == 0) {
        SPDNN_LAYER(y0, loc)
      } else if (to_y) {
        SPDNN_LAYER(loc, y)
      } else {
        SPDNN_LAYER(y, loc)
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  if (lx == 0) alive[ly] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (live) {
    int any = 0;
    for (int j = lx; j < N; j += WX) any |= y[j] > 0.0f;
    if (any) atomic_or(&alive[ly], 1);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (live && lx == 0) cat[r] = alive[ly] ? 1.0f : 0.0f;
}
