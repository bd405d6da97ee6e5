// The poison patterns of poison.hpp, one layout per float dtype.
#include "verify/poison.hpp"

#include <cstring>

namespace kforge {

namespace {

struct Layout {
  int bytes = 0;
  int mantissa_bits = 0;   // stored fraction bits; the top one is the quiet bit
  std::uint64_t exponent = 0;  // all exponent bits set
};

// Six-bit codes in the top payload bits (just below the quiet bit), then filler bits for the
// wider types so the pattern is not a power-of-two-looking value.
constexpr std::uint64_t kUntouchedCode = 0x15, kGuardCode = 0x2a;

bool layout_of(DType t, Layout& l) {
  switch (t) {
    case DType::fp64: l = {8, 52, 0x7ff0000000000000ull}; return true;
    case DType::fp32: l = {4, 23, 0x7f800000ull}; return true;
    case DType::fp16: l = {2, 10, 0x7c00ull}; return true;
    case DType::bf16: l = {2, 7, 0x7f80ull}; return true;
    default: return false;
  }
}

std::uint64_t pattern(const Layout& l, std::uint64_t code) {
  const int payload_bits = l.mantissa_bits - 1;  // below the quiet bit, which stays 0: signalling
  const int low = payload_bits - 6;
  const std::uint64_t filler = low > 0 ? (0xc0de5a17c0de5a17ull & ((1ull << low) - 1)) | 1 : 0;
  return l.exponent | (code << low) | filler;
}

std::uint64_t load(const Layout& l, const unsigned char* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, static_cast<std::size_t>(l.bytes));  // little-endian hosts only, as elsewhere
  return v;
}

void fill(DType t, unsigned char* dst, std::size_t bytes, std::uint64_t code, unsigned char int_byte) {
  Layout l;
  if (!layout_of(t, l)) {
    std::memset(dst, int_byte, bytes);
    return;
  }
  const std::uint64_t v = pattern(l, code);
  unsigned char element[8];
  std::memcpy(element, &v, 8);
  for (std::size_t i = 0; i < bytes; ++i) dst[i] = element[i % static_cast<std::size_t>(l.bytes)];
}

}  // namespace

void fill_poison(DType t, unsigned char* dst, std::size_t bytes) { fill(t, dst, bytes, kUntouchedCode, 0xff); }

void fill_guard(DType t, unsigned char* dst, std::size_t bytes) { fill(t, dst, bytes, kGuardCode, 0xa5); }

bool is_untouched(DType t, const unsigned char* p) {
  Layout l;
  if (!layout_of(t, l)) {
    for (std::size_t k = 0; k < dtype_size(t); ++k)
      if (p[k] != 0xff) return false;
    return true;
  }
  return load(l, p) == pattern(l, kUntouchedCode);
}

NaNOrigin nan_origin(DType t, const unsigned char* p) {
  Layout l;
  if (!layout_of(t, l)) return NaNOrigin::none;
  const std::uint64_t v = load(l, p);
  const std::uint64_t mantissa = v & ((1ull << l.mantissa_bits) - 1);
  if ((v & l.exponent) != l.exponent || mantissa == 0) return NaNOrigin::none;  // not a NaN
  const std::uint64_t code = (mantissa >> (l.mantissa_bits - 7)) & 0x3f;     // sign and quiet bit ignored
  if (code == kUntouchedCode) return NaNOrigin::poison;
  if (code == kGuardCode) return NaNOrigin::guard;
  return NaNOrigin::none;
}

}  // namespace kforge
