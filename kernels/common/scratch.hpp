#pragma once
// Per-thread scratch for cpu kernels (`#include "kernels/common/scratch.hpp"`, or through
// kernels/common/simd.hpp): a block's work buffers come from here instead of an allocation per
// block. Slot `which` (0..7) of the calling thread holds at least `bytes`, 64-byte aligned,
// grown on demand and kept between blocks and launches.
#include <cstdlib>

static void* scratch(int which, long long bytes) {
  static thread_local void* buf[8] = {};
  static thread_local long long cap[8] = {};
  if (cap[which] < bytes) {
    std::free(buf[which]);
    buf[which] = std::aligned_alloc(64, ((bytes + 63) / 64) * 64);
    cap[which] = bytes;
  }
  return buf[which];
}
static float* scratch_floats(int which, long long floats) { return static_cast<float*>(scratch(which, floats * 4)); }
