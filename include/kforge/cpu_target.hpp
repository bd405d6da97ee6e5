#pragma once
// What the cpu backend's kernels (and a problem file's native reference) are compiled with: the
// compiler and the instruction set. One place, so that the backend, the native references and a
// kernel spec's "applies" agree on it.
#include <string>

namespace kforge {

// $KFORGE_CXX, else the compiler that built kforge.
[[nodiscard]] std::string cpu_compiler();

// $KFORGE_CPU_MARCH (a -march name such as x86-64-v3, checked once with the compiler: a misspelt
// name is a UsageError naming the variable), else "native".
[[nodiscard]] std::string cpu_march();

// Floats in one vector register of that instruction set: 16 where it has AVX-512F, else 8 (what a
// kernel's `VW = 0` becomes, kernels/common/simd.hpp). Asked of the compiler once per march;
// kernel specs read it in "applies" as CPU_SIMD_FLOATS, where a crossover depends on the width.
[[nodiscard]] int cpu_simd_floats();

}  // namespace kforge
