// The OpenCL prelude: the opencl backend puts this text in front of every program's source,
// followed by `#line 1 "<kernel file>"`, so the compiler's messages still name the kernel's own
// lines. It holds what every kernel would otherwise copy: the storage type of the dtype the
// kernel is compiled for (-DKF_DTYPE_FP16, _BF16 or _FP64; fp32 otherwise) and loads and stores
// that convert it to and from float (the arithmetic is float). Every name starts with kf_ or
// KF_, so a kernel's own names never collide with them.
//
//   kf_storage                          the element type in global memory
//   kf_load(p), kf_store(v, p)          one element <-> float (bf16: round to nearest even,
//                                       a NaN stays a quiet NaN; fp16: round to nearest even)
//   KF_FLOATN(n)                        float for n = 1, floatn for n = 2, 4, 8, 16
//   KF_LOADN(n, p), KF_STOREN(n, v, p)  n adjacent elements of global memory <-> KF_FLOATN(n)
//   KF_VLOAD(n, p), KF_VSTORE(n, v, p)  KF_FLOATN(n) through a float pointer (local, private)
//   KF_CAT(a, b)                        pastes a and b after expanding them: KF_CAT(float, VEC)
// n is a literal or a macro that expands to one (-D VEC=4). fp64 kernels (cl_khr_fp64, enabled
// here) compute in double: for them kf_storage is double and there are no float conversions.
#define KF_CAT_(a, b) a##b
#define KF_CAT(a, b) KF_CAT_(a, b)

#if defined(KF_DTYPE_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double kf_storage;
#else

#if defined(KF_DTYPE_FP16)
typedef half kf_storage;  // storage only: vload_half / vstore_half_rte convert it
inline float kf_load(__global const half* p) { return vload_half(0, p); }
inline void kf_store(float v, __global half* p) { vstore_half_rte(v, 0, p); }
#define KF_LOADN_(n, p) KF_CAT(vload_half, n)(0, (p))
#define KF_STOREN_(n, v, p) KF_CAT(KF_CAT(vstore_half, n), _rte)((v), 0, (p))

#elif defined(KF_DTYPE_BF16)
typedef ushort kf_storage;  // the upper half of a float's bits
inline float kf_load(__global const ushort* p) { return as_float((uint)*p << 16); }
inline ushort kf_f32_to_bf16(float f) {
  const uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
  return (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline void kf_store(float v, __global ushort* p) { *p = kf_f32_to_bf16(v); }
// The same per lane of an n-vector.
#define KF_BF16_VECTOR(n)                                                                    \
  inline float##n kf_bf16_to_f32_##n(ushort##n b) {                                          \
    return as_float##n(convert_uint##n(b) << 16);                                            \
  }                                                                                          \
  inline ushort##n kf_f32_to_bf16_##n(float##n f) {                                          \
    const uint##n x = as_uint##n(f);                                                         \
    const uint##n rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;                          \
    const uint##n quiet = (x >> 16) | 0x40u;                                                 \
    return convert_ushort##n(select(rounded, quiet, (x & 0x7fffffffu) > 0x7f800000u));       \
  }
KF_BF16_VECTOR(2)
KF_BF16_VECTOR(4)
KF_BF16_VECTOR(8)
KF_BF16_VECTOR(16)
#define KF_LOADN_(n, p) KF_CAT(kf_bf16_to_f32_, n)(KF_CAT(vload, n)(0, (p)))
#define KF_STOREN_(n, v, p) KF_CAT(vstore, n)(KF_CAT(kf_f32_to_bf16_, n)(v), 0, (p))

#else
typedef float kf_storage;
inline float kf_load(__global const float* p) { return *p; }
inline void kf_store(float v, __global float* p) { *p = v; }
#define KF_LOADN_(n, p) KF_CAT(vload, n)(0, (p))
#define KF_STOREN_(n, v, p) KF_CAT(vstore, n)((v), 0, (p))
#endif

// n elements of storage <-> KF_FLOATN(n); width 1 is the scalar pair above.
#define KF_LOADN(n, p) KF_CAT(kf_load_, n)(p)
#define KF_STOREN(n, v, p) KF_CAT(kf_store_, n)(v, p)
#define kf_load_1(p) kf_load(p)
#define kf_load_2(p) KF_LOADN_(2, p)
#define kf_load_4(p) KF_LOADN_(4, p)
#define kf_load_8(p) KF_LOADN_(8, p)
#define kf_load_16(p) KF_LOADN_(16, p)
#define kf_store_1(v, p) kf_store((v), (p))
#define kf_store_2(v, p) KF_STOREN_(2, v, p)
#define kf_store_4(v, p) KF_STOREN_(4, v, p)
#define kf_store_8(v, p) KF_STOREN_(8, v, p)
#define kf_store_16(v, p) KF_STOREN_(16, v, p)
#endif  // KF_DTYPE_FP64

// Float vectors of n lanes, and their loads and stores through a float pointer.
typedef float kf_float1;
typedef float2 kf_float2;
typedef float4 kf_float4;
typedef float8 kf_float8;
typedef float16 kf_float16;
#define KF_FLOATN(n) KF_CAT(kf_float, n)
#define KF_VLOAD(n, p) KF_CAT(kf_vload_, n)(p)
#define KF_VSTORE(n, v, p) KF_CAT(kf_vstore_, n)(v, p)
#define kf_vload_1(p) (*(p))
#define kf_vload_2(p) vload2(0, (p))
#define kf_vload_4(p) vload4(0, (p))
#define kf_vload_8(p) vload8(0, (p))
#define kf_vload_16(p) vload16(0, (p))
#define kf_vstore_1(v, p) (*(p) = (v))
#define kf_vstore_2(v, p) vstore2((v), 0, (p))
#define kf_vstore_4(v, p) vstore4((v), 0, (p))
#define kf_vstore_8(v, p) vstore8((v), 0, (p))
#define kf_vstore_16(v, p) vstore16((v), 0, (p))
