// What the dense cpu kernels (gemm, conv2d, attention, moe) share, put in front of a kernel by
// `#include "kernels/common/simd.hpp"` (kforge expands it: src/backend/kernel_includes.hpp):
// the SIMD width, the dtype's storage with its conversions, the vector types and per-thread
// scratch (kernels/common/scratch.hpp). A user's kernel may include it too.
//
// Needs VW defined (a kernel parameter): the SIMD width in floats, 8 (AVX2) or 16 (AVX-512);
// 0 means the widest the compiler targets.
#include "kernels/common/scratch.hpp"  // scratch(), scratch_floats()

#if VW == 0
#undef VW
#if defined(__AVX512F__)
#define VW 16
#else
#define VW 8
#endif
#endif

// The dtype's storage and its conversions (src/backend/cpu/prelude.hpp): the arithmetic is fp32.
typedef kf_storage T;
static inline float to_f32(T x) { return kf_to_f32(x); }
static inline T from_f32(float f) { return kf_from_f32(f); }

typedef float vf __attribute__((vector_size(VW * 4)));
typedef float vf_unaligned __attribute__((vector_size(VW * 4), aligned(4)));
