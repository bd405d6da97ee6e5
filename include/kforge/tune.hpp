#pragma once
// Tuning: a strategy proposes configurations of a kernel's space, each goes through the gates
// (evaluate), and the fastest that passed wins. The default configuration is always tried
// first, so tuning never ends worse than not tuning.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kforge/evaluate.hpp"

namespace kforge {

// Every valid configuration, in odometer order (the first parameter varies slowest), at most
// `limit` of them.
[[nodiscard]] std::vector<ParamValues> valid_configs(const KernelSpec& k, const Sizes& s,
                                                     std::size_t limit = 1u << 20);
// Up to `count` distinct valid configurations drawn uniformly from the product (rejection
// sampling, so a huge space is never materialized). Seeded: same seed, same draws.
[[nodiscard]] std::vector<ParamValues> sample_configs(const KernelSpec& k, const Sizes& s,
                                                      std::size_t count, std::uint64_t seed);

struct TuneOptions {
  std::string strategy = "random";  // random | brute
  int budget = 20;                  // evaluations, the default configuration included
  std::uint64_t seed = 1;
};

struct TuneResult {
  std::vector<EvalResult> evaluations;  // in the order run
  int best = -1;                        // index of the fastest passed evaluation, -1 if none
};

using TuneProgress = std::function<void(int done, int total, const EvalResult& last)>;

// `base` fixes problem, kernel, sizes, dtype and backend; its params are ignored. Evaluations
// run in this process with `bench` on (library kernels are trusted).
//
[[nodiscard]] TuneResult tune(const EvalRequest& base, Backend& backend, const TuneOptions& o,
                              const TuneProgress& progress = {});

}  // namespace kforge
