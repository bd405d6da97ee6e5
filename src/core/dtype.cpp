#include "kforge/dtype.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::int8: return "int8";
    case DType::int32: return "int32";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType t : {DType::fp64, DType::fp32, DType::fp16, DType::bf16, DType::int8, DType::int32})
    if (dtype_name(t) == name) return t;
  throw UsageError("unknown dtype '" + std::string(name) +
                   "': use one of fp64, fp32, fp16, bf16, int8, int32");
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::fp64: return 8;
    case DType::fp32: case DType::int32: return 4;
    case DType::fp16: case DType::bf16: return 2;
    case DType::int8: return 1;
  }
  return 0;
}

bool is_float(DType t) { return t != DType::int8 && t != DType::int32; }

double unit_roundoff(DType t) {
  switch (t) {
    case DType::fp64: return std::ldexp(1.0, -53);
    case DType::fp32: return std::ldexp(1.0, -24);
    case DType::fp16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
    default: return 0.0;
  }
}

std::uint16_t fp32_to_fp16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x1ffu);  // NaN stays a quiet NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
  if (a >= 0x38800000u) {                       // normal in fp16 (>= 2^-14)
    const std::uint32_t v = a - 0x38000000u;    // rebias the exponent from 127 to 15
    return sign | static_cast<std::uint16_t>((v + 0xfffu + ((v >> 13) & 1u)) >> 13);
  }
  // Subnormal in fp16: value = m * 2^-24; round m to nearest even.
  const int shift = 126 - static_cast<int>(a >> 23);
  if (shift >= 25) return sign;  // below half the smallest subnormal (ties go to even zero)
  const std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  std::uint32_t m = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (m & 1u))) ++m;
  return sign | static_cast<std::uint16_t>(m);
}

float fp16_to_fp32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

std::uint16_t fp32_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bf16_to_fp32(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

namespace {
template <class T>
T saturate_round(double v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);
  if (r < std::numeric_limits<T>::min()) return std::numeric_limits<T>::min();
  if (r > std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

void encode_serial(DType t, std::span<const double> src, void* dst) {
  const std::size_t n = src.size();
  switch (t) {
    case DType::fp64: std::memcpy(dst, src.data(), n * 8); return;
    case DType::fp32: {
      auto* d = static_cast<float*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<float>(src[i]);
      return;
    }
    case DType::fp16: case DType::bf16: {
      auto* d = static_cast<std::uint16_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) {
        const float f = static_cast<float>(src[i]);
        d[i] = t == DType::fp16 ? fp32_to_fp16(f) : fp32_to_bf16(f);
      }
      return;
    }
    case DType::int8: {
      auto* d = static_cast<std::int8_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] = saturate_round<std::int8_t>(src[i]);
      return;
    }
    case DType::int32: {
      auto* d = static_cast<std::int32_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] = saturate_round<std::int32_t>(src[i]);
      return;
    }
  }
}

void decode_serial(DType t, const void* src, std::span<double> dst) {
  const std::size_t n = dst.size();
  for (std::size_t i = 0; i < n; ++i) {
    switch (t) {
      case DType::fp64: dst[i] = static_cast<const double*>(src)[i]; break;
      case DType::fp32: dst[i] = static_cast<const float*>(src)[i]; break;
      case DType::fp16: dst[i] = fp16_to_fp32(static_cast<const std::uint16_t*>(src)[i]); break;
      case DType::bf16: dst[i] = bf16_to_fp32(static_cast<const std::uint16_t*>(src)[i]); break;
      case DType::int8: dst[i] = static_cast<const std::int8_t*>(src)[i]; break;
      case DType::int32: dst[i] = static_cast<const std::int32_t*>(src)[i]; break;
    }
  }
}

}  // namespace

// Large tensors convert on every core: a verification at sizes beyond the last-level cache
// converts hundreds of megabytes per run.
constexpr std::int64_t kConvertGrain = 1 << 16;

void encode(DType t, std::span<const double> src, void* dst) {
  const std::size_t esize = dtype_size(t);
  parallel_for(static_cast<std::int64_t>(src.size()), [&](std::int64_t b, std::int64_t e) {
    encode_serial(t, src.subspan(b, e - b), static_cast<unsigned char*>(dst) + b * esize);
  }, kConvertGrain);
}

void decode(DType t, const void* src, std::span<double> dst) {
  const std::size_t esize = dtype_size(t);
  parallel_for(static_cast<std::int64_t>(dst.size()), [&](std::int64_t b, std::int64_t e) {
    decode_serial(t, static_cast<const unsigned char*>(src) + b * esize, dst.subspan(b, e - b));
  }, kConvertGrain);
}

void round_to(DType t, std::span<double> values) {
  parallel_for(static_cast<std::int64_t>(values.size()), [&](std::int64_t b, std::int64_t e) {
    std::vector<unsigned char> tmp(kConvertGrain * dtype_size(t));
    for (std::int64_t i = b; i < e; i += kConvertGrain) {
      const auto part = values.subspan(i, std::min(e - i, kConvertGrain));
      encode_serial(t, part, tmp.data());
      decode_serial(t, tmp.data(), part);
    }
  }, kConvertGrain);
}

}  // namespace kforge
