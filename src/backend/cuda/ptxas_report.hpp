#pragma once
// ptxas's verbose report (`--ptxas-options=-v`, which NVRTC passes on when it builds a CUBIN):
// registers, spills, stack and shared memory of each function, known at compile time, so a
// machine with no GPU can still tell an agent that its kernel spills.
#include <string>

#include "kforge/backend.hpp"

namespace kforge::cuda {

struct PtxasReport {
  CompilerResources entry;  // the entry function's figures; reported_by empty if absent
  std::string rest;         // the log without ptxas's "info" lines (warnings, if any)
};

// Splits NVRTC's log into the entry's resources and everything else. `entry` is the lowered
// name (what ptxas calls the function); `arch` is "sm_90".
[[nodiscard]] PtxasReport parse_ptxas_report(const std::string& log, const std::string& entry,
                                             const std::string& arch);

}  // namespace kforge::cuda
