#pragma once
// What tune() and its distributed form (src/dist/tune_dist.cpp) both start from: the budget
// checked, the kernel's space at these sizes, the strategy over it, and how many evaluations
// the run will make at most.
#include <algorithm>
#include <memory>

#include "kforge/error.hpp"
#include "kforge/strategy.hpp"
#include "kforge/tune.hpp"

namespace kforge {

struct TuneStart {
  Space space;
  std::unique_ptr<Strategy> strategy;
  int total = 0;  // min(budget, the space's size)
};

inline TuneStart start_tuning(const EvalRequest& base, const TuneOptions& o) {
  if (o.budget < 1) throw UsageError("tuning budget must be at least 1 evaluation");
  TuneStart t{Space::from_kernel(base.kernel, base.sizes), nullptr, 0};
  StrategyOptions so = o.strategy_options;
  so.budget = o.budget;
  t.strategy = make_strategy(o.strategy, t.space, o.seed, so);
  t.total = static_cast<int>(std::min<std::uint64_t>(o.budget, t.space.size()));
  return t;
}

}  // namespace kforge
