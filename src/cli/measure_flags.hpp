#pragma once
// The measurement options that `kforge bench` and `kforge suite` share: hot or cold caches,
// the stopping rule (noise criterion, or a fixed count of repetitions) and its time limits.
#include <CLI/CLI.hpp>

#include "kforge/measure.hpp"

namespace kforge::cli {

struct MeasureFlags {
  bool cold = false;
  bool roof_now = false;
  int repetitions = 0;
  double min_time_s = MeasureOptions{}.min_time_s;
  double max_time_s = MeasureOptions{}.max_time_s;
  double max_noise = MeasureOptions{}.target_rel_stdev;
  void add_to(CLI::App& app);
  // Copies the flags into `o`; throws UsageError for a value out of range.
  void apply(MeasureOptions& o) const;
};

}  // namespace kforge::cli
