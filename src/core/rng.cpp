#include "kforge/rng.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge {

std::string_view distribution_name(Distribution d) {
  switch (d) {
    case Distribution::normal: return "normal";
    case Distribution::uniform: return "uniform";
    case Distribution::wide: return "wide";
    case Distribution::sparse: return "sparse";
    case Distribution::integers: return "integers";
  }
  return "?";
}

Distribution parse_distribution(std::string_view name) {
  for (Distribution d : kAllDistributions)
    if (distribution_name(d) == name) return d;
  throw UsageError("unknown distribution '" + std::string(name) +
                   "': use normal, uniform, wide, sparse or integers");
}

std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The seed passes through mix64 before it meets the index, so seeds k and k+1 start their
// counters at unrelated points and no two seeds' fills are shifted copies of each other.
std::uint64_t random_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return mix64(mix64(seed ^ mix64(stream + 0x9e3779b97f4a7c15ull)) + index * 0x9e3779b97f4a7c15ull);
}

double random_unit(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return static_cast<double>(random_bits(seed, stream, index) >> 11) * 0x1.0p-53;
}

void fill_random(std::span<double> out, Distribution d, std::uint64_t seed, std::uint64_t stream,
                 double wide_log2) {
  const std::size_t n = out.size();
  auto normal = [&](std::size_t i) {  // Box-Muller on two independent uniforms
    const double u1 = 1.0 - random_unit(seed, stream, 2 * i);
    const double u2 = random_unit(seed, stream, 2 * i + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  };
  auto draw = [&](std::size_t i) {
    switch (d) {
      case Distribution::normal: return normal(i);
      case Distribution::uniform: return 2.0 * random_unit(seed, stream, i) - 1.0;
      case Distribution::wide: {
        const std::uint64_t r = random_bits(seed, stream, i);
        const double mag = std::exp2(wide_log2 * (2.0 * (static_cast<double>(r >> 12) * 0x1.0p-52) - 1.0));
        return (r & 1) ? -mag : mag;
      }
      case Distribution::sparse:
        return random_unit(seed, stream ^ 0x5bd1e995u, i) < 0.6 ? 0.0 : normal(i);
      case Distribution::integers:
        return static_cast<double>(static_cast<int>(random_bits(seed, stream, i) % 17) - 8);
    }
    return 0.0;
  };
  // Each value depends on its index alone, so the threads' split cannot change the draw.
  parallel_for(static_cast<std::int64_t>(n), [&](std::int64_t b, std::int64_t e) {
    for (auto i = static_cast<std::size_t>(b); i < static_cast<std::size_t>(e); ++i) out[i] = draw(i);
  }, 1 << 16);
  const bool all_zero = std::all_of(out.begin(), out.end(), [](double v) { return v == 0.0; });
  if (all_zero && n > 0) out[random_bits(seed, stream, n) % n] = 1.0;
}

}  // namespace kforge
