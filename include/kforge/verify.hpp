#pragma once
// Verification: fresh inputs per trial from several distributions, outputs poisoned before the
// run, every element compared with the double reference under a dtype-aware bound.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kforge/problem.hpp"

namespace kforge {

struct VerifyOptions {
  int trials = 2;  // trial t uses distribution t mod the list and the problem's scalars for t
  std::vector<Distribution> distributions{Distribution::normal, Distribution::uniform};
  std::uint64_t seed = 0x6b666f726765ull;
};

// One comparison of a kernel's outputs with the reference.
struct Comparison {
  bool passed = true;
  std::string failure;            // empty when passed: what was wrong, in words
  std::int64_t elements = 0;
  std::int64_t bad_elements = 0;  // beyond the bound
  std::int64_t unwritten = 0;     // still holding the poison
  std::int64_t non_finite = 0;    // NaN or Inf where the reference is finite
  double max_abs_error = 0, max_rel_error = 0, rel_frobenius_error = 0;
  double max_bound_ratio = 0;     // the worst |error| / bound; must stay <= 1
};

struct VerifyReport {
  bool passed = true;
  std::string failure;
  int trials_run = 0;
  Comparison worst;               // the failing trial, or the one with the largest bound ratio
  std::string worst_distribution;
  [[nodiscard]] nlohmann::json to_json() const;
};

// The bytes used to poison outputs: all ones, a NaN in every float type.
inline constexpr unsigned char kPoisonByte = 0xff;

// Runs the kernel on an instance and returns its output tensors (out/inout, in order), decoded.
// `poison_inout` says the inout tensors must be poisoned, not filled, before the run.
// `unwritten` receives, per output element, whether it still held the poison.
using KernelCall = std::function<std::vector<std::vector<double>>(
    const Instance& inst, bool poison_inout, std::vector<std::vector<bool>>& unwritten)>;

[[nodiscard]] Comparison compare(const Problem& p, const Instance& inst,
                                 const std::vector<std::vector<double>>& got,
                                 const std::vector<std::vector<bool>>& unwritten,
                                 const std::vector<std::vector<double>>& ref,
                                 const std::vector<std::vector<double>>& magnitude);

[[nodiscard]] VerifyReport verify(const Problem& p, const Sizes& s, DType t, const KernelCall& call,
                                  const VerifyOptions& opts = {});

}  // namespace kforge
