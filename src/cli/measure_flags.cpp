#include "cli/measure_flags.hpp"

#include "kforge/error.hpp"

namespace kforge::cli {

void MeasureFlags::add_to(CLI::App& app) {
  app.add_flag("--cold", cold,
               "time every run with cold caches: rotate among enough copies of the inputs "
               "(together over 4x the last-level cache) that no run finds its data cached. "
               "Default: hot, one set of inputs reused, so after warm-up the data sits in the "
               "caches as in a loop that calls the kernel again and again");
  app.add_flag("--roof-now", roof_now,
               "also measure the memory roof (STREAM's kernels, all threads) right before and "
               "after the timed runs and report the speed of light against it: on a shared host "
               "the bandwidth swings from one minute to the next, and the cached ceilings keep "
               "the best minute ever seen (about 1 s more per result on the cpu)");
  app.add_option("--repetitions", repetitions,
                 "take exactly N timed samples (fixed-count criterion, for scripts). Default 0: "
                 "sample until the relative stdev is under --max-noise or stops improving, at "
                 "least 10 samples and --min-time, at most --max-time")
      ->capture_default_str();
  app.add_option("--min-time", min_time_s, "seconds of sampling at least (noise criterion)")
      ->capture_default_str();
  app.add_option("--max-time", max_time_s, "seconds of sampling at most: the timeout")
      ->capture_default_str();
  app.add_option("--max-noise", max_noise, "target relative stdev (0.005 = 0.5%)")
      ->capture_default_str();
}

void MeasureFlags::apply(MeasureOptions& o) const {
  if (repetitions < 0) throw UsageError("--repetitions must be 0 (noise criterion) or more");
  if (min_time_s < 0 || max_time_s <= 0 || max_noise <= 0)
    throw UsageError("--min-time, --max-time and --max-noise must be positive");
  o.cold = cold;
  o.roof_now = roof_now;
  o.repetitions = repetitions;
  o.min_time_s = min_time_s;
  o.max_time_s = std::max(max_time_s, min_time_s);
  o.target_rel_stdev = max_noise;
}

}  // namespace kforge::cli
