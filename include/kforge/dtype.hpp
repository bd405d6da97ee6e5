#pragma once
// Element types and exact conversions. fp16 and bf16 are stored as their 16-bit patterns;
// conversion from fp32 rounds to nearest, ties to even, as the hardware does.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kforge {

enum class DType { fp64, fp32, fp16, bf16, int8, int32 };

[[nodiscard]] std::string_view dtype_name(DType t);
[[nodiscard]] DType parse_dtype(std::string_view name);  // throws UsageError
[[nodiscard]] std::size_t dtype_size(DType t);
[[nodiscard]] bool is_float(DType t);
// Unit roundoff u (half an ulp of 1); 0 for integer types, which must match exactly.
[[nodiscard]] double unit_roundoff(DType t);

[[nodiscard]] std::uint16_t fp32_to_fp16(float f);
[[nodiscard]] float fp16_to_fp32(std::uint16_t h);
[[nodiscard]] std::uint16_t fp32_to_bf16(float f);
[[nodiscard]] float bf16_to_fp32(std::uint16_t b);

// Rounds each value to `t` and stores it at `dst` (dtype_size(t) bytes each).
// Doubles go to fp16/bf16 through fp32.
void encode(DType t, std::span<const double> src, void* dst);
// Reads values of type `t` into doubles, exactly.
void decode(DType t, const void* src, std::span<double> dst);
// Rounds values in place to what `t` can hold, so a reference sees exactly what a kernel sees.
void round_to(DType t, std::span<double> values);

}  // namespace kforge
