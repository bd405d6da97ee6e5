#pragma once
// Poison that tells "never written" from "computed from poison" (docs/verification.md).
//
// Outputs start as a signalling NaN whose payload means "untouched"; guard bands around every
// buffer hold a signalling NaN with another payload. Arithmetic on a signalling NaN returns it
// quieted with its payload kept (IEEE 754 recommends it; x86, ARM and PoCL do it), so a NaN in
// an output tells where it came from:
//   the exact untouched pattern       the element was never written
//   a NaN with the untouched payload  the kernel read an output before writing it
//   a NaN with the guard payload      the kernel read past the end (or before the start) of a buffer
// Both payloads sit in the top six payload bits, so they survive fp32 <-> fp16/bf16/fp64
// conversions inside a kernel (a narrowing keeps the top mantissa bits). Integer dtypes have no
// NaN: their poison is all-ones bytes and their guard bands are plain bytes.
#include <cstddef>
#include <cstdint>

#include "kforge/dtype.hpp"

namespace kforge {

enum class NaNOrigin : std::uint8_t { none, poison, guard };

// Fills `bytes` (a whole number of elements) at `dst` with the dtype's "untouched" pattern.
void fill_poison(DType t, unsigned char* dst, std::size_t bytes);
// Fills `bytes` at `dst` with the dtype's guard-band pattern (repeated whole elements; a
// trailing partial element gets the pattern's first bytes).
void fill_guard(DType t, unsigned char* dst, std::size_t bytes);
// Whether the element at `p` still holds exactly the untouched pattern.
[[nodiscard]] bool is_untouched(DType t, const unsigned char* p);
// Where a NaN element at `p` came from (none: not a NaN, or a NaN without either payload).
[[nodiscard]] NaNOrigin nan_origin(DType t, const unsigned char* p);

}  // namespace kforge
