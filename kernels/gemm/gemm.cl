// gemm for the opencl backend: C = alpha*A*B + beta*C, row-major, any M, N, K >= 1.
// In the spirit of CLBlast's xgemm: each work-group owns an MWG x NWG tile of C and walks the
// reduction in KWG-deep slices. Per slice its MDIMC x NDIMC work-items cooperatively copy the
// A slice (MWG x KWG, VWM-vectors along K) and the B slice (KWG x NWG) into local memory, converted to float and
// zero-filled outside the matrices, then each work-item accumulates its
// MWI x NWI = (MWG/MDIMC) x (NWG/NDIMC) outputs in registers, NWI as NWI/VWN vectors of VWN.
// Work-item (tx, ty) owns rows ty + i*MDIMC and column vectors tx + j*NDIMC (strided, so
// neighbouring work-items touch neighbouring memory).
//
// Parameters (all #defines):
//   MWG, NWG   the work-group's tile of C (rows, columns)
//   KWG        reduction slice held in local memory
//   MDIMC      work-items along M (local size y);  NDIMC  along N (local size x)
//   VWN        vector width along N for B loads, the compute and C stores (1, 2, 4, 8, 16)
//   VWM        vector width along K for A loads (1, 2, 4, 8, 16)
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout.

#define MWI (MWG / MDIMC)      // rows per work-item
#define NWI (NWG / NDIMC)      // columns per work-item
#define NVI (NWI / VWN)        // column vectors per work-item
#define NVG (NWG / VWN)        // column vectors per work-group tile
#define THREADS (MDIMC * NDIMC)
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

typedef kf_storage T;             // the dtype's storage type (the prelude's)
typedef KF_FLOATN(VWN) floatV;    // VWN floats: a vector of B, of the accumulators, of C

// Alm (MWG, KWG) = A[m0:m0+MWG, k0:k0+KWG] as VWM-vectors along K, zero outside A.
inline void load_a(__global const T* A, int M, int K, int m0, int k0, int tid,
                   __local float* Alm) {
#define A_ITEMS (MWG * KWG / VWM)
  for (int r = 0; r < CEIL_DIV(A_ITEMS, THREADS); ++r) {
    const int c = r * THREADS + tid;
    if (A_ITEMS % THREADS == 0 || c < A_ITEMS) {
      const int mm = c / (KWG / VWM), kk = (c % (KWG / VWM)) * VWM;  // consecutive items: a row
      const int gm = m0 + mm, gk = k0 + kk;
      __local float* dst = Alm + mm * KWG + kk;
      __global const T* src = A + (long)gm * K + gk;
      if (gm < M && gk + VWM <= K) {
        KF_VSTORE(VWM, KF_LOADN(VWM, src), dst);
      } else {
#pragma unroll
        for (int e = 0; e < VWM; ++e) dst[e] = (gm < M && gk + e < K) ? kf_load(src + e) : 0.0f;
      }
    }
  }
}

// Blm (KWG, NVG) = B[k0:k0+KWG, n0:n0+NWG] as VWN-vectors, zero outside B.
inline void load_b(__global const T* B, int N, int K, int n0, int k0, int tid,
                   __local floatV* Blm) {
#define B_ITEMS (KWG * NVG)
  for (int r = 0; r < CEIL_DIV(B_ITEMS, THREADS); ++r) {
    const int c = r * THREADS + tid;
    if (B_ITEMS % THREADS == 0 || c < B_ITEMS) {
      const int kk = c / NVG, jv = c % NVG;
      const int gk = k0 + kk, gn = n0 + jv * VWN;
      floatV v = (floatV)(0.0f);
      if (gk < K) {
        __global const T* src = B + (long)gk * N + gn;
        if (gn + VWN <= N) {
          v = KF_LOADN(VWN, src);
        } else {
          float tmp[VWN];
          for (int e = 0; e < VWN; ++e) tmp[e] = gn + e < N ? kf_load(src + e) : 0.0f;
          v = KF_VLOAD(VWN, tmp);
        }
      }
      Blm[kk * NVG + jv] = v;
    }
  }
}

__kernel __attribute__((reqd_work_group_size(NDIMC, MDIMC, 1)))
void gemm(__global const T* A, __global const T* B, __global T* C, int M, int N, int K,
          float alpha, float beta) {
  __local float Alm[MWG * KWG];   // (MWG, KWG)
  __local floatV Blm[KWG * NVG];  // (KWG, NWG / VWN)
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * NDIMC + tx;
  const int n0 = get_group_id(0) * NWG, m0 = get_group_id(1) * MWG;

  floatV acc[MWI][NVI];  // (MWI, NVI) vectors, kept in registers: every loop over them unrolls
#pragma unroll
  for (int i = 0; i < MWI; ++i)
#pragma unroll
    for (int j = 0; j < NVI; ++j) acc[i][j] = (floatV)(0.0f);

  for (int k0 = 0; k0 < K; k0 += KWG) {
    load_a(A, M, K, m0, k0, tid, Alm);
    load_b(B, N, K, n0, k0, tid, Blm);
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int kk = 0; kk < KWG; ++kk) {
      floatV b[NVI];
#pragma unroll
      for (int j = 0; j < NVI; ++j) b[j] = Blm[kk * NVG + j * NDIMC + tx];
#pragma unroll
      for (int i = 0; i < MWI; ++i) {
        const float a = Alm[(i * MDIMC + ty) * KWG + kk];
#pragma unroll
        for (int j = 0; j < NVI; ++j) acc[i][j] = fma((floatV)(a), b[j], acc[i][j]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  // C = alpha*acc + beta*C; with beta == 0 the old C is never read (it may hold NaN).
#pragma unroll
  for (int i = 0; i < MWI; ++i) {
    const int gm = m0 + i * MDIMC + ty;
    if (gm >= M) break;
    __global T* crow = C + (long)gm * N;
#pragma unroll
    for (int j = 0; j < NVI; ++j) {
      const int gn = n0 + (j * NDIMC + tx) * VWN;
      if (gn >= N) break;
      const floatV r = alpha * acc[i][j];
      if (gn + VWN <= N) {
        const floatV out = beta == 0.0f ? r : fma((floatV)(beta), KF_LOADN(VWN, crow + gn), r);
        KF_STOREN(VWN, out, crow + gn);
      } else {
        float tmp[VWN];
        KF_VSTORE(VWN, r, tmp);
        for (int e = 0; e < VWN && gn + e < N; ++e)
          kf_store(beta == 0.0f ? tmp[e] : fma(beta, kf_load(crow + gn + e), tmp[e]), crow + gn + e);
      }
    }
  }
}
