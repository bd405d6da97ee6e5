#pragma once
// A counter-based generator: value i of stream s under seed k is a pure function of (k, s, i),
// so the same seed gives the same inputs on every backend, thread count and machine.
#include <cstdint>
#include <span>
#include <string_view>

namespace kforge {

enum class Distribution {
  normal,      // standard normal
  uniform,     // uniform in [-1, 1]
  wide,        // log-uniform magnitude over 2^-w..2^w (w = 20 unless narrowed), random sign
  sparse,      // about 60% exact zeros, the rest standard normal
  integers,    // small integers in [-8, 8] (index errors show as wrong integers)
};

[[nodiscard]] std::string_view distribution_name(Distribution d);
[[nodiscard]] Distribution parse_distribution(std::string_view name);  // throws UsageError
inline constexpr Distribution kAllDistributions[] = {Distribution::normal, Distribution::uniform,
                                                     Distribution::wide, Distribution::sparse,
                                                     Distribution::integers};

// splitmix64's finalizer: a bijection of 64-bit words with full avalanche (each input bit flips
// each output bit with probability 1/2), so neighbouring inputs give unrelated outputs.
[[nodiscard]] std::uint64_t mix64(std::uint64_t z);

// 64 random bits for (seed, stream, index).
[[nodiscard]] std::uint64_t random_bits(std::uint64_t seed, std::uint64_t stream,
                                        std::uint64_t index);
// Uniform in [0, 1), 53 bits.
[[nodiscard]] double random_unit(std::uint64_t seed, std::uint64_t stream, std::uint64_t index);
// Fills `out` with draws from `d`; never all zeros (a sparse fill keeps at least one value).
// `wide_log2` is w for the wide distribution: a narrow type needs a narrower range (fp16 tops
// out at 65504, so products of 2^20 would overflow before any kernel ran).
void fill_random(std::span<double> out, Distribution d, std::uint64_t seed, std::uint64_t stream,
                 double wide_log2 = 20);

}  // namespace kforge
