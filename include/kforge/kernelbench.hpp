#pragma once
// KernelBench's own verdict beside kforge's (docs/kernelbench.md): a kernel run on
// KernelBench's inputs (its seeds, get_inputs() and weights, in float32) and compared with torch's
// float32 outputs by torch.allclose(expected, got, atol, rtol), trial after trial.
#include <string>
#include <vector>

#include "kforge/kernel.hpp"
#include "kforge/problem.hpp"

namespace kforge {

// One of KernelBench's correctness trials: the instance (inputs and parameters filled, outputs
// empty) and the outputs torch computed in float32.
struct KbTrial {
  Instance inst;
  std::vector<std::vector<double>> expected;
};

struct KbCheckResult {
  std::string status;  // passed, incorrect, compile_error, crashed, timeout
  int trials = 0, trials_passed = 0;
  double max_abs_diff = 0;  // over every trial, as KernelBench reports it
  double time_s = 0;        // the kernel's median seconds on trial 0's inputs (KernelBench times
                            // every candidate it runs, right or wrong)
  std::string detail;       // why it failed, in words
  [[nodiscard]] bool passed() const { return status == "passed"; }
};

// Compiles `k` on `backend` and runs it on each trial in a forked child (a crash or a hang
// there is a result, never the caller's end). KernelBench's check passes when every trial does:
// |expected - got| <= atol + rtol * |got| everywhere, no NaN.
[[nodiscard]] KbCheckResult kernelbench_check(const Problem& p, const KernelSpec& k, const std::string& backend,
                                              const std::vector<KbTrial>& trials, double atol, double rtol,
                                              double timeout_s, int timed_runs = 20);

}  // namespace kforge
