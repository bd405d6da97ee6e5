// Included before every C++ kernel source (g++ -include). A kernel is a plain function
//   static void body(const kf_ctx& ctx, const float* A, ..., int M, ..., float alpha, ...)
// exported under its entry name with KF_KERNEL(entry, body); kforge calls it once per block.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

struct kf_dim3 {
  long long x, y, z;
};
struct kf_ctx {
  kf_dim3 block_idx, grid_dim, block_dim;
  int worker, workers;  // which pool thread runs this block, of how many
};

namespace kf_detail {
template <class... A, std::size_t... I>
inline void call(void (*f)(const kf_ctx&, A...), const kf_ctx& c, void* const* args,
                 std::index_sequence<I...>) {
  f(c, *static_cast<std::remove_cv_t<A>*>(args[I])...);
}
template <class... A>
inline void call(void (*f)(const kf_ctx&, A...), const kf_ctx& c, void* const* args) {
  call(f, c, args, std::index_sequence_for<A...>{});
}
}  // namespace kf_detail

#define KF_KERNEL(entry, body)                                                          \
  extern "C" __attribute__((visibility("default"))) void entry(const kf_ctx* c,         \
                                                               void* const* args) {    \
    kf_detail::call(body, *c, args);                                                    \
  }

// The storage type of the dtype the kernel is compiled for (-DKF_DTYPE_FP16 or _BF16; fp32
// otherwise) and its conversions to and from float: bf16 rounds to nearest even and keeps NaN
// a NaN. Prefixed, so a kernel's own names never collide with them.
#if defined(KF_DTYPE_FP16)
typedef unsigned short kf_storage;
static inline float kf_to_f32(kf_storage h) { return (float)__builtin_bit_cast(_Float16, h); }
static inline kf_storage kf_from_f32(float f) { return __builtin_bit_cast(unsigned short, (_Float16)f); }
#elif defined(KF_DTYPE_BF16)
typedef unsigned short kf_storage;
static inline float kf_to_f32(kf_storage b) { return __builtin_bit_cast(float, (unsigned)b << 16); }
static inline kf_storage kf_from_f32(float f) {
  unsigned x = __builtin_bit_cast(unsigned, f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (kf_storage)((x >> 16) | 0x40u);
  return (kf_storage)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
#else
typedef float kf_storage;
static inline float kf_to_f32(kf_storage f) { return f; }
static inline kf_storage kf_from_f32(float f) { return f; }
#endif
