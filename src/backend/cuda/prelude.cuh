// The CUDA prelude: the cuda backend puts this text in front of every source NVRTC compiles,
// followed by `#line 1 "<kernel file>"`, so NVRTC's messages still name the kernel's own lines
// (tests/cuda_compile.cmake gives it to nvcc with -include). It holds what every kernel would
// otherwise copy: the storage type of the dtype the kernel is compiled for (-DKF_DTYPE_FP16,
// _BF16 or _FP64; fp32 otherwise) and its conversions to and from float, the names the cpu
// prelude uses. Every name starts with kf_ or KF_, so a kernel's own names never collide.
//
//   kf_storage                      the element type in global memory
//   kf_to_f32(x), kf_from_f32(f)    one element <-> float (round to nearest even; NaN stays NaN)
//   KF_NEG_INF                      -infinity (NVRTC has no <cmath>, so no INFINITY)
//   KF_UNROLL(n)                    `#pragma unroll n` for an n that is a macro (-D VEC=4)
// fp64 kernels compute in double: for them kf_storage is double and there are no conversions.

#if defined(KF_DTYPE_FP16)
#include <cuda_fp16.h>
typedef __half kf_storage;
__device__ __forceinline__ float kf_to_f32(kf_storage x) { return __half2float(x); }
__device__ __forceinline__ kf_storage kf_from_f32(float f) { return __float2half_rn(f); }
#elif defined(KF_DTYPE_BF16)
#include <cuda_bf16.h>
typedef __nv_bfloat16 kf_storage;
__device__ __forceinline__ float kf_to_f32(kf_storage x) { return __bfloat162float(x); }
__device__ __forceinline__ kf_storage kf_from_f32(float f) { return __float2bfloat16_rn(f); }
#elif defined(KF_DTYPE_FP64)
typedef double kf_storage;
#else
typedef float kf_storage;
__device__ __forceinline__ float kf_to_f32(kf_storage x) { return x; }
__device__ __forceinline__ kf_storage kf_from_f32(float f) { return f; }
#endif

#define KF_NEG_INF (-__int_as_float(0x7f800000))
#define KF_STR_(x) #x
#define KF_UNROLL(n) _Pragma(KF_STR_(unroll n))
