// A strategy against a recorded space: exact, cheap and hardware-independent comparisons.
#include "kforge/replay.hpp"

#include <cmath>

namespace kforge {

ReplayResult replay(const RecordedSpace& r, const std::string& strategy, const Budget& budget,
                    std::uint64_t seed, const StrategyOptions& o) {
  StrategyOptions so = o;
  so.budget = budget.evaluations;
  auto s = make_strategy(strategy, r.space, seed, so);
  ReplayResult out;
  out.strategy = strategy;
  out.seed = seed;
  out.trace = run_search(*s, [&](const Config& c) { return r.evaluate(c); }, budget);
  out.optimum_ms = r.optimum_ms;
  if (out.trace.best >= 0) {
    out.best_ms = *out.trace.steps[out.trace.best].objective;
    out.ratio = out.best_ms / r.optimum_ms;
  }
  out.to_within_5 = out.trace.steps_to_within(r.optimum_ms, 0.05);
  out.to_within_1 = out.trace.steps_to_within(r.optimum_ms, 0.01);
  out.report = s->report();
  return out;
}

nlohmann::json ReplayResult::to_json(const Space& space) const {
  nlohmann::json j{{"strategy", strategy},       {"seed", seed},
                   {"evaluations", trace.steps.size()}, {"stopped", trace.stopped},
                   {"spent_s", trace.spent_s},  {"optimum_ms", optimum_ms},
                   {"best_ms", best_ms},        {"ratio_to_optimum", ratio},
                   {"evaluations_to_within_5pct", to_within_5},
                   {"evaluations_to_within_1pct", to_within_1}};
  if (trace.best >= 0) j["best"] = space.label(trace.steps[trace.best].config);
  j["trace"] = nlohmann::json::array();
  for (const Step& s : trace.steps)
    j["trace"].push_back({{"config", space.label(s.config)},
                          {"time_ms", s.objective ? nlohmann::json(*s.objective) : nlohmann::json()},
                          {"best_ms", std::isfinite(s.best) ? nlohmann::json(s.best) : nlohmann::json()}});
  if (!report.empty()) j["strategy_report"] = report;
  return j;
}

}  // namespace kforge
