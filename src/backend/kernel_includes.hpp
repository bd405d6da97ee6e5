#pragma once
// Kernel sources share code through headers that kforge carries: a line
//   #include "kernels/common/simd.hpp"
// in a kernel (the library's or a user's, in any language) is replaced by that header's text
// before the source reaches its compiler, so every backend compiles one self-contained text
// (the cpu backend in a cache folder, NVRTC and OpenCL from a string: none of them could find
// kforge's files by a path) and the compile cache's key covers the headers' text too. `#line`
// directives around each header keep the compiler's messages pointing at the right file and
// line. Each header is put in once (the first time it is included). Other #include lines are
// left to the compiler.
#include <string>

namespace kforge {

// `name`: the kernel's file for the `#line` that follows a header ("kernel.cpp" when unknown).
// Throws CompileError naming the line for a "kernels/..." header kforge does not carry.
[[nodiscard]] std::string expand_kernel_includes(const std::string& source, const std::string& name);

}  // namespace kforge
