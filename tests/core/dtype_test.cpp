// Element types: fp32 -> fp16/bf16 must round to nearest, ties to even, exactly as hardware
// does; every 16-bit pattern must survive a trip through fp32; encode/decode must agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kforge/dtype.hpp"
#include "kforge/error.hpp"
#include "kforge/rng.hpp"

namespace kforge {
namespace {

float bits_to_float(std::uint32_t b) { return std::bit_cast<float>(b); }
bool fp16_is_nan(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_is_nan(std::uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// The compiler's own _Float16 conversion (libgcc's correctly rounded one) as an oracle.
std::uint16_t oracle_fp16(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

// bf16 by its definition: of the two bf16 neighbours of f, the nearer; on a tie, the even one.
std::uint16_t oracle_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t lo = x & 0xffff0000u;
  if ((x & 0xffffu) == 0) return static_cast<std::uint16_t>(x >> 16);
  const double dlo = bits_to_float(lo);
  // The next pattern away from zero; from the largest finite bf16 that is infinity.
  const double dhi = bits_to_float(lo + 0x10000u);
  const double d = f;
  const double to_lo = std::fabs(d - dlo), to_hi = std::fabs(dhi - d);
  std::uint32_t pick;
  if (std::isinf(dhi)) {
    // Past the largest finite value, round to infinity iff at or beyond the midpoint, which
    // sits where the exponent range would have placed the next value.
    const double mid = std::fabs(dlo) + std::ldexp(1.0, std::ilogb(dlo) - 8);
    pick = std::fabs(d) >= mid ? lo + 0x10000u : lo;
  } else if (to_lo < to_hi) {
    pick = lo;
  } else if (to_hi < to_lo) {
    pick = lo + 0x10000u;
  } else {
    pick = ((lo >> 16) & 1u) ? lo + 0x10000u : lo;
  }
  return static_cast<std::uint16_t>(pick >> 16);
}

TEST(Fp16, TiesRoundToEvenBothWays) {
  // 1 + 2^-11 lies halfway between 1 (even mantissa) and 1 + 2^-10 (odd): down to 1.
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even): up.
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just off the tie goes to the nearer neighbour.
  EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)), 0x3c01);
  // The same on the negative side.
  EXPECT_EQ(fp32_to_fp16(-(1.0f + std::ldexp(1.0f, -11))), 0xbc00);
  EXPECT_EQ(fp32_to_fp16(-(1.0f + 3 * std::ldexp(1.0f, -11))), 0xbc02);
  // A tie that carries into the exponent: 2 - 2^-11 is halfway between 2 - 2^-10 (odd) and 2.
  EXPECT_EQ(fp32_to_fp16(2.0f - std::ldexp(1.0f, -11)), 0x4000);
}

TEST(Fp16, LargestFiniteAndOverflow) {
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp32_to_fp16(65519.99f), 0x7bff);  // below the midpoint to the next binade
  EXPECT_EQ(fp32_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);   // the midpoint rounds to infinity (even)
  EXPECT_EQ(fp32_to_fp16(-65520.0f), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(1e30f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(Fp16, SubnormalsAndZero) {
  const float tiny = std::ldexp(1.0f, -24);  // the smallest fp16 subnormal
  EXPECT_EQ(fp32_to_fp16(tiny), 0x0001);
  EXPECT_EQ(fp16_to_fp32(0x0001), tiny);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // half of it: tie to even zero
  EXPECT_EQ(fp32_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 0.0f)), 0x0000);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  // Subnormal ties: 1.5 ulp -> 2, 2.5 ulp -> 2, 3.5 ulp -> 4.
  EXPECT_EQ(fp32_to_fp16(1.5f * tiny), 0x0002);
  EXPECT_EQ(fp32_to_fp16(2.5f * tiny), 0x0002);
  EXPECT_EQ(fp32_to_fp16(3.5f * tiny), 0x0004);
  EXPECT_EQ(fp32_to_fp16(-2.5f * tiny), 0x8002);
  // The largest subnormal, and the tie between it and the smallest normal (even: normal).
  EXPECT_EQ(fp32_to_fp16(1023.0f * tiny), 0x03ff);
  EXPECT_EQ(fp32_to_fp16(1023.5f * tiny), 0x0400);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);
  // Zeros keep their sign, including a negative value that rounds to zero.
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
  EXPECT_EQ(fp16_to_fp32(0x8000), 0.0f);
}

TEST(Fp16, NanStaysNanAndInfStaysInf) {
  for (std::uint32_t bits : {0x7fc00000u, 0x7f800001u, 0x7f802000u, 0xffc00000u, 0x7fffffffu,
                             0xff800001u}) {
    const std::uint16_t h = fp32_to_fp16(bits_to_float(bits));
    EXPECT_TRUE(fp16_is_nan(h)) << std::hex << bits << " -> " << h;
    EXPECT_EQ(h >> 15, bits >> 31) << "sign of NaN " << std::hex << bits;
    EXPECT_TRUE(std::isnan(fp16_to_fp32(h)));
  }
  EXPECT_EQ(fp16_to_fp32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_fp32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7c01)));  // a signalling NaN pattern is still NaN
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0xffff)));
}

TEST(Fp16, MatchesCompilerConversionOnManyFloats) {
  // Every exponent and sign, with mantissas at and around each rounding boundary, plus
  // random mantissas: ~1.3 million floats against the compiler's correctly rounded cast.
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x0800, 0x17ff};
  std::int64_t checked = 0;
  for (std::uint32_t hi = 0; hi < (1u << 19); ++hi) {
    for (int v = 0; v < 3; ++v) {
      const std::uint32_t low = v < 2 ? lows[(hi + 3 * v) % 8]
                                      : static_cast<std::uint32_t>(random_bits(7, 0, hi) & 0x1fff);
      const float f = bits_to_float((hi << 13) | low);
      if (std::isnan(f)) continue;
      const std::uint16_t got = fp32_to_fp16(f), want = oracle_fp16(f);
      ASSERT_EQ(got, want) << "fp32 bits 0x" << std::hex << std::bit_cast<std::uint32_t>(f);
      ++checked;
    }
  }
  EXPECT_GT(checked, 1'000'000);
}

TEST(Fp16, EveryPatternRoundTripsThroughFp32) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = fp16_to_fp32(h);
    // The value, from the format's definition.
    const int e = (b >> 10) & 0x1f, m = b & 0x3ff;
    const double sign = (b & 0x8000) ? -1.0 : 1.0;
    if (e == 0x1f) {
      if (m == 0) ASSERT_EQ(f, sign * INFINITY) << b;
      else ASSERT_TRUE(std::isnan(f)) << b;
    } else {
      const double want = e == 0 ? sign * std::ldexp(m, -24) : sign * std::ldexp(1024 + m, e - 25);
      ASSERT_EQ(static_cast<double>(f), want) << "pattern " << b;
      ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0) << b;
    }
    const std::uint16_t back = fp32_to_fp16(f);
    if (fp16_is_nan(h)) {
      ASSERT_TRUE(fp16_is_nan(back)) << b;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << b;
    } else {
      ASSERT_EQ(back, h) << "pattern " << b;
    }
  }
}

TEST(Bf16, TiesRoundToEvenBothWays) {
  EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // to even (down)
  EXPECT_EQ(fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // to even (up)
  EXPECT_EQ(fp32_to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  EXPECT_EQ(fp32_to_bf16(-(1.0f + std::ldexp(1.0f, -8))), 0xbf80);
  EXPECT_EQ(fp32_to_bf16(-(1.0f + 3 * std::ldexp(1.0f, -8))), 0xbf82);
  EXPECT_EQ(fp32_to_bf16(2.0f - std::ldexp(1.0f, -8)), 0x4000);  // carries into the exponent
}

TEST(Bf16, EdgeValues) {
  EXPECT_EQ(fp32_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(-INFINITY), 0xff80);
  // The largest finite bf16, and fp32 values past the midpoint above it, which overflow.
  EXPECT_EQ(bf16_to_fp32(0x7f7f), bits_to_float(0x7f7f0000u));
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x7f7f8000u)), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  // Subnormals round the same way; the smallest fp32 subnormal goes to zero.
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00008000u)), 0x0000);  // tie -> even zero
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00018000u)), 0x0002);  // tie -> even
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00008001u)), 0x0001);
  // NaNs stay NaN, even one whose payload lives only in the bits that are dropped.
  for (std::uint32_t bits : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f80ffffu}) {
    const std::uint16_t b = fp32_to_bf16(bits_to_float(bits));
    EXPECT_TRUE(bf16_is_nan(b)) << std::hex << bits << " -> " << b;
    EXPECT_EQ(b >> 15, bits >> 31);
  }
}

TEST(Bf16, MatchesDefinitionOnManyFloats) {
  std::int64_t checked = 0;
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (std::uint32_t hi = 0; hi < 65536; ++hi) {
    for (int v = 0; v < 10; ++v) {
      const std::uint32_t low = v < 6 ? lows[v]
                                      : static_cast<std::uint32_t>(random_bits(9, v, hi) & 0xffff);
      const float f = bits_to_float((hi << 16) | low);
      if (std::isnan(f)) continue;
      ASSERT_EQ(fp32_to_bf16(f), oracle_bf16(f))
          << "fp32 bits 0x" << std::hex << std::bit_cast<std::uint32_t>(f);
      ++checked;
    }
  }
  EXPECT_GT(checked, 600'000);
}

TEST(Bf16, EveryPatternRoundTripsThroughFp32) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = bf16_to_fp32(h);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(f) >> 16, b);
    const std::uint16_t back = fp32_to_bf16(f);
    if (bf16_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << b;
      ASSERT_TRUE(bf16_is_nan(back)) << b;
    } else {
      ASSERT_EQ(back, h) << "pattern " << b;
    }
  }
}

TEST(DType, NamesSizesAndParse) {
  const DType all[] = {DType::fp64, DType::fp32, DType::fp16, DType::bf16, DType::int8, DType::int32};
  const std::size_t sizes[] = {8, 4, 2, 2, 1, 4};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(parse_dtype(dtype_name(all[i])), all[i]);
    EXPECT_EQ(dtype_size(all[i]), sizes[i]) << dtype_name(all[i]);
  }
  EXPECT_TRUE(is_float(DType::fp16));
  EXPECT_TRUE(is_float(DType::bf16));
  EXPECT_FALSE(is_float(DType::int8));
  EXPECT_FALSE(is_float(DType::int32));
  // Unit roundoff is half the gap between 1 and the next value of the type.
  EXPECT_EQ(unit_roundoff(DType::fp16), (fp16_to_fp32(0x3c01) - 1.0) / 2);
  EXPECT_EQ(unit_roundoff(DType::bf16), (bf16_to_fp32(0x3f81) - 1.0) / 2);
  EXPECT_EQ(unit_roundoff(DType::fp32), (std::nextafter(1.0f, 2.0f) - 1.0) / 2);
  EXPECT_EQ(unit_roundoff(DType::fp64), (std::nextafter(1.0, 2.0) - 1.0) / 2);
  EXPECT_EQ(unit_roundoff(DType::int8), 0.0);
}

TEST(DType, ParseErrorsNameTheInput) {
  for (const char* bad : {"fp8", "float", "FP32", "", "fp32 ", "int16"}) {
    try {
      (void)parse_dtype(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'" + std::string(bad) + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("fp32"), std::string::npos) << "should list the valid names: " << msg;
    }
  }
}

std::vector<double> some_values() {
  std::vector<double> v(257);
  fill_random(v, Distribution::wide, 11, 3);
  v.insert(v.end(), {0.0, -0.0, 1.0, -1.0, 0.5, 65504.0, 1e-3, 3.0e38, -2.5, 2.5, 127.4, -128.6});
  return v;
}

TEST(Encode, EveryDTypeRoundsLikeItsScalarConversion) {
  const std::vector<double> src = some_values();
  const std::size_t n = src.size();
  for (DType t : {DType::fp64, DType::fp32, DType::fp16, DType::bf16, DType::int8, DType::int32}) {
    std::vector<unsigned char> bytes(n * dtype_size(t) + 1, 0xab);
    encode(t, src, bytes.data());
    EXPECT_EQ(bytes.back(), 0xab) << "encode wrote past the end for " << dtype_name(t);
    std::vector<double> back(n);
    decode(t, bytes.data(), back);
    std::vector<double> rounded = src;
    round_to(t, rounded);
    for (std::size_t i = 0; i < n; ++i) {
      const double x = src[i];
      double want;
      switch (t) {
        case DType::fp64: want = x; break;
        case DType::fp32: want = static_cast<float>(x); break;
        case DType::fp16: want = fp16_to_fp32(fp32_to_fp16(static_cast<float>(x))); break;
        case DType::bf16: want = bf16_to_fp32(fp32_to_bf16(static_cast<float>(x))); break;
        case DType::int8: want = std::clamp(std::nearbyint(x), -128.0, 127.0); break;
        default: want = std::clamp(std::nearbyint(x), -2147483648.0, 2147483647.0); break;
      }
      ASSERT_EQ(back[i], want) << dtype_name(t) << " of " << x;
      if (is_float(t))
        ASSERT_EQ(std::signbit(back[i]), std::signbit(want)) << dtype_name(t) << " of " << x;
      ASSERT_EQ(rounded[i], want) << "round_to " << dtype_name(t) << " of " << x;
    }
  }
}

TEST(Encode, IntegersRoundTiesToEvenAndSaturate) {
  const std::vector<double> src{2.5, 3.5, -2.5, 1000.0, -1000.0, 0.49, -7.0, 1e12, NAN};
  std::vector<std::int8_t> i8(src.size());
  encode(DType::int8, src, i8.data());
  EXPECT_EQ(std::vector<int>(i8.begin(), i8.end()),
            (std::vector<int>{2, 4, -2, 127, -128, 0, -7, 127, 0}));
  std::vector<std::int32_t> i32(src.size());
  encode(DType::int32, src, i32.data());
  EXPECT_EQ(i32, (std::vector<std::int32_t>{2, 4, -2, 1000, -1000, 0, -7, 2147483647, 0}));
}

TEST(Encode, Fp32PreservesSpecialValues) {
  const std::vector<double> src{INFINITY, -INFINITY, NAN, -0.0};
  for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
    std::vector<unsigned char> bytes(src.size() * dtype_size(t));
    encode(t, src, bytes.data());
    std::vector<double> back(src.size());
    decode(t, bytes.data(), back);
    EXPECT_EQ(back[0], INFINITY) << dtype_name(t);
    EXPECT_EQ(back[1], -INFINITY) << dtype_name(t);
    EXPECT_TRUE(std::isnan(back[2])) << dtype_name(t);
    EXPECT_TRUE(back[3] == 0.0 && std::signbit(back[3])) << dtype_name(t);
  }
}

}  // namespace
}  // namespace kforge
