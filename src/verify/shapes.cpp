// Shape fuzzing: a kernel right at 1024³ can still skip the tail at 1000 or break at 1. The
// sizes drawn are the ones where tiled code goes wrong: 1, small primes, one off a tile, one
// off the requested size, and one size small while the others stay large.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "kforge/error.hpp"
#include "kforge/verify.hpp"

namespace kforge {
namespace {

constexpr std::int64_t kSmallPrimes[] = {2, 3, 5, 7, 11, 13, 17, 31, 61, 67, 97, 127};
constexpr std::int64_t kThinSizes[] = {1, 2, 3, 5, 7};
// The reference's work per fuzzed shape is kept under this many element-steps (the problem's
// fuzz_work: by default the product of all sizes), so a thorough verdict stays cheap whatever
// size was requested.
constexpr double kMaxWork = 6e6;

// Too much work: shrink the largest size towards an odd number until it fits.
void shrink_to_work_cap(const Problem& p, Sizes& s) {
  while (p.fuzz_work(s) > kMaxWork) {
    auto largest = std::max_element(s.begin(), s.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
    if (largest->second <= 1) return;  // all ones: nothing left to shrink (check_sizes decides)
    largest->second = std::max<std::int64_t>(1, (largest->second / 3) | 1);
  }
}

}  // namespace

std::vector<Sizes> fuzz_shapes(const Problem& p, const Sizes& requested,
                               const std::vector<std::int64_t>& tile_hints, int count,
                               std::uint64_t seed, RefusedShapes* refused) {
  std::vector<Sizes> out;
  if (count <= 0) return out;
  std::set<std::int64_t> pool{1};
  for (auto v : kSmallPrimes) pool.insert(v);
  for (auto t : tile_hints)
    if (t >= 2) pool.insert({t - 1, t, t + 1});
  for (const auto& [name, v] : requested) pool.insert({std::max<std::int64_t>(v - 1, 1), v + 1});
  const std::vector<std::int64_t> values(pool.begin(), pool.end());

  // Only sizes the problem accepts (check_sizes throws on the others).
  std::set<Sizes> refused_seen;
  const auto valid = [&](const Sizes& s) {
    try {
      p.check_sizes(s);
      return true;
    } catch (const UsageError& e) {
      if (refused && refused_seen.insert(s).second && refused->count++ == 0) refused->first_reason = e.what();
      return false;
    }
  };
  std::set<Sizes> seen{requested};
  Sizes ones;
  for (const auto& name : p.size_names()) ones[name] = 1;
  if (valid(ones) && seen.insert(ones).second) out.push_back(ones);
  // One less than requested in every size: where a tail after whole tiles begins.
  Sizes below;
  for (const auto& [name, v] : requested) below[name] = std::max<std::int64_t>(v - 1, 1);
  if (static_cast<int>(out.size()) < count && p.fuzz_work(below) <= kMaxWork && valid(below) && seen.insert(below).second)
    out.push_back(below);
  // Thin shapes: one size small, the others as requested (shrunk to the work cap), so a special
  // path for small M (or N, or K) is taken with the other sizes large. At least two random draws
  // keep their place.
  for (std::uint64_t axis = 0; axis < p.size_names().size() && static_cast<int>(out.size()) < count - 2; ++axis) {
    Sizes thin = requested;
    thin[p.size_names()[axis]] = kThinSizes[random_bits(seed, 0x7415 + axis, 0) % std::size(kThinSizes)];
    shrink_to_work_cap(p, thin);
    if (valid(thin) && seen.insert(thin).second) out.push_back(thin);
  }
  for (std::uint64_t draw = 0; static_cast<int>(out.size()) < count && draw < 64ull * count; ++draw) {
    Sizes s;
    std::uint64_t stream = 0;
    for (const auto& name : p.size_names())
      s[name] = values[random_bits(seed, 0x5a4e ^ stream++, draw) % values.size()];
    shrink_to_work_cap(p, s);
    if (valid(s) && seen.insert(s).second) out.push_back(s);
  }
  return out;
}

}  // namespace kforge
