#pragma once
// The `task` message, and the measurement behind it: the problem (description, ABI per
// language, sizes, dtypes, tolerance) and the baseline's time and speed-of-light time at these
// sizes, measured once per run (the library kernel through the same gates, timed beside the
// problem's own baseline) and kept in the run's meta, so a resumed run measures nothing again.
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/agent.hpp"
#include "kforge/problem.hpp"

namespace kforge::agent {

struct Baseline {
  std::string name;       // the problem's baseline (OpenBLAS for gemm), else the library kernel
  double median_s = 0;    // 0: unknown (no library kernel for the backend's language)
  double sol_s = 0;       // the speed-of-light time at these sizes; 0: unknown
  std::string sol_bound;  // "compute" or "memory"
  std::string device;
  // Why candidates are compiled only (the backend cannot launch on this machine); empty: they run.
  std::string compile_only;
  [[nodiscard]] nlohmann::json to_json() const;
  static Baseline from_json(const nlohmann::json& j);
};

[[nodiscard]] Lang backend_lang(const std::string& backend);
// The entry point a candidate gets when it names none: the library kernel's, else the problem's.
[[nodiscard]] std::string default_entry(const Problem& p, Lang lang, const Sizes& s);
[[nodiscard]] Baseline measure_baseline(const AgentOptions& o, const Problem& p);
// The task, less the fields that change as the run goes (best, remaining, batch, recent).
[[nodiscard]] nlohmann::json task_message(const AgentOptions& o, const Problem& p, const Baseline& b,
                                          const std::string& entry, const std::string& counters);

}  // namespace kforge::agent
