#pragma once
// The speed-of-light gate of a timed result: beyond the machine's roof by more than the noise,
// a result is suspect, but only after the roof it beat was measured again, then and there, for
// its own data: a roof measured under a neighbour's load must never reject a correct kernel.
#include <string>

#include "kforge/backend.hpp"
#include "kforge/measure.hpp"

namespace kforge {

struct SolQuestion {
  DType dtype = DType::fp32;
  double flops = 0, bytes = 0, written = -1;
  bool hot = true;
  double baseline_s = 0;  // 0: none (no score)
};

struct SolJudgement {
  Roofline roofline;       // the speed of light reported: the cached roof, or the roof re-measured
  bool suspect = false;
  double judged = 0;       // the fraction of the roof judged (re-measured: at most its upper bound)
  double margin = 1;       // a result beyond the roof by more than this times is suspect
  std::string detail;      // for the speed_of_light check, in words
  std::string remeasured;  // empty unless the roof was measured again: what, and what it gave
};

[[nodiscard]] SolJudgement judge_speed_of_light(Backend& backend, const SolQuestion& q,
                                                const Timing& timing);

}  // namespace kforge
