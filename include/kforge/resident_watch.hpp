#pragma once
// A child's resident memory (RSS) watched from the parent: a limit the child cannot raise, for
// a child whose address space cannot be limited (ThreadSanitizer's race worker reserves
// terabytes for its shadow) or whose address-space limit it may raise up to the hard one (the
// isolated worker with the index_width run's room). Checked every 20 ms while run_process
// waits: past the limit the child's whole group is SIGKILLed (ProcessResult::signal 9).
#include <string>
#include <vector>

#include "kforge/subprocess.hpp"

namespace kforge {

struct ResidentWatch {
  long long limit_bytes = 0;     // 0: not watched
  long long exceeded_bytes = 0;  // set by run_process: > 0 when the child was killed at this RSS
  // A time limit of its own for one stretch of the child's work that may take far longer than
  // the rest (the isolated worker's index_width run: one launch at a shape past 2^31 elements):
  // when the child's stderr first shows `stretch_marker`, its deadline moves to that moment plus
  // `stretch_timeout_s`, if that is later. Empty: none.
  std::string stretch_marker;
  double stretch_timeout_s = 0;
  bool stretched = false;  // set by run_process: the marker was seen
};

// run_process, with `watch` on the child's resident memory (kforge/subprocess.hpp).
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input,
                          const ProcessLimits& limits, ResidentWatch& watch);

// ProcessResult::describe(), or "held N MiB of resident memory, past its limit of L MiB, and
// was killed" when the watch killed it.
[[nodiscard]] std::string describe(const ProcessResult& p, const ResidentWatch& w);

}  // namespace kforge
