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
