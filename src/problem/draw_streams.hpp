#pragma once
// Streams of the conditioning draws of problem files and KernelBench problems, apart from those
// of fill_random (trial * 1000 + tensor). flag and probability use the scan family's streams,
// so a problem re-expressed as a file draws exactly the inputs of its compiled-in twin.
#include <cstdint>

namespace kforge {
inline constexpr std::uint64_t kIndexStream = 6000, kFlagStream = 7000, kProbStream = 9000, kSparseStream = 10000;
}  // namespace kforge
