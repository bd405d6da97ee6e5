// gemm for the cuda backend: C = alpha*A*B + beta*C, row-major, any M, N, K >= 1.
// Each block owns a (BM x BN) tile of C. The reduction runs in BK-wide slices staged in shared
// memory (converted to fp32, double-buffered: the next slice is fetched from global memory into
// registers while the current one is multiplied), and each thread accumulates TM x TN results
// in registers. With beta == 0 the old C is never read (it may hold anything, even NaN).
//
// Parameters (all #defines):
//   BM, BN   the block's tile of C                     threads per block: (BM/TM) * (BN/TN)
//   BK       reduction slice held in shared memory     shared memory: 2*BK*(BM+BN+2*PAD)*4 bytes
//   TM, TN   each thread's micro-tile of C (registers)
//   VEC      a thread's rows (and columns) come in runs of VEC adjacent ones, read from shared
//            memory as one VEC-wide vector; runs are strided across the tile so that neighbour
//            threads touch neighbour addresses (coalesced stores, no bank conflicts)
//   MINB     blocks per SM the register allocation must allow (__launch_bounds__); 2 caps a
//            256-thread block at 128 registers per thread
typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define WX (BN / TN)        // threads along a row of the tile
#define WY (BM / TM)        // threads along a column
#define THREADS (WX * WY)
#define PAD 4               // keeps the transposed stores of A free of bank conflicts
#define A_LOADS (BM * BK / THREADS)
#define B_LOADS (BK * BN / THREADS)

#if VEC == 4
typedef float4 VecT;
#elif VEC == 2
typedef float2 VecT;
#else
typedef float VecT;
#endif

// VEC floats from shared memory into v[0..VEC).
__device__ __forceinline__ void load_vec(const float* p, float* v) {
  const VecT x = *reinterpret_cast<const VecT*>(p);
#if VEC == 4
  v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
#elif VEC == 2
  v[0] = x.x; v[1] = x.y;
#else
  v[0] = x;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
gemm(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N, int K,
     float alpha, float beta) {
  __shared__ __align__(16) float As[2][BK][BM + PAD];  // (BK,BM): A's slice, transposed
  __shared__ __align__(16) float Bs[2][BK][BN + PAD];  // (BK,BN)
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * WX + tx;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  // A[m0:m0+BM, k0:k0+BK] and B[k0:k0+BK, n0:n0+BN] go through registers (the next slice is
  // in flight during the math) into shared memory, zero outside the matrices. Consecutive
  // threads read consecutive k of A and consecutive n of B; load l of a thread is a fixed
  // offset from its first, so the addresses cost one pointer each.
  float a_next[A_LOADS], b_next[B_LOADS];
  const int a_r = tid / BK, a_c = tid % BK;  // THREADS % BK == 0: a_c is the same for every l
  const T* a_ptr = A + (long long)(m0 + a_r) * K + a_c;
  // B: BN % THREADS == 0 (a row takes several loads) or THREADS % BN == 0 (a load takes rows).
  const int b_r = tid / BN, b_c = tid % BN;
  const T* b_ptr = B + (long long)b_r * N + n0 + b_c;
  auto fetch = [&](int k0) {
    const bool a_col_ok = k0 + a_c < K;
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int r = a_r + l * (THREADS / BK);
      a_next[l] = a_col_ok && m0 + r < M
                      ? kf_to_f32(a_ptr[(long long)l * (THREADS / BK) * K + k0])
                      : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int r = b_r + (l * THREADS) / BN, c = b_c + (l * THREADS) % BN;
      b_next[l] = k0 + r < K && n0 + c < N
                      ? kf_to_f32(b_ptr[(long long)(k0 + (l * THREADS) / BN) * N + (l * THREADS) % BN])
                      : 0.0f;
    }
  };
  auto stage = [&](int buf) {
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) As[buf][a_c][a_r + l * (THREADS / BK)] = a_next[l];
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l)
      Bs[buf][b_r + (l * THREADS) / BN][b_c + (l * THREADS) % BN] = b_next[l];
  };

  float acc[TM][TN];  // (TM,TN)
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  const int slices = (K + BK - 1) / BK;
  fetch(0);
  stage(0);
  __syncthreads();
  for (int s = 0; s < slices; ++s) {
    const int cur = s & 1;
    if (s + 1 < slices) fetch((s + 1) * BK);  // global loads in flight during the math
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int g = 0; g < TM / VEC; ++g) load_vec(&As[cur][k][(g * WY + ty) * VEC], &a[g * VEC]);
#pragma unroll
      for (int g = 0; g < TN / VEC; ++g) load_vec(&Bs[cur][k][(g * WX + tx) * VEC], &b[g * VEC]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read in slice s-1, before every thread passed the barrier
    // that ended it, so one barrier per slice suffices.
    if (s + 1 < slices) stage(cur ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int gm = m0 + ((i / VEC) * WY + ty) * VEC + i % VEC;
    if (gm >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gn = n0 + ((j / VEC) * WX + tx) * VEC + j % VEC;
      if (gn >= N) continue;
      T* c = C + (long long)gm * N + gn;
      const float r = alpha * acc[i][j];
      *c = kf_from_f32(beta != 0.0f ? fmaf(beta, kf_to_f32(*c), r) : r);
    }
  }
}
