#pragma once
// One evaluation: one kernel configuration on one problem instance, through the gates
//   invalid_config -> compile_error -> not_supported -> crashed/timeout -> incorrect or
//   nondeterministic -> (timed) suspect -> passed
// A failed gate stops the evaluation, never the run.
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/kernel.hpp"
#include "kforge/energy.hpp"
#include "kforge/measure.hpp"
#include "kforge/subprocess.hpp"
#include "kforge/verify.hpp"

namespace kforge {

enum class Disposition {
  passed, incorrect, compile_error, crashed, timeout, invalid_config, not_supported,
  nondeterministic,  // passed once, failed on the same inputs again (a race, uninitialised reads)
  suspect,           // faster than the measured speed of light: never scored as a win
};
[[nodiscard]] std::string_view disposition_name(Disposition d);
[[nodiscard]] Disposition parse_disposition(std::string_view s);

struct EvalRequest {
  std::string problem;
  // The problem file it was loaded from; empty for the library's. evaluate_isolated fills it
  // from the loaded problem, so the worker can load the file again.
  std::string problem_file;
  KernelSpec kernel;
  Sizes sizes;           // complete (already resolved against the problem's defaults)
  Scalars scalars;       // values the user fixed (checked); the others follow the trial
  DType dtype = DType::fp32;
  ParamValues params;    // overrides of the kernel's defaults
  std::string backend = "cpu";
  BackendOptions backend_options;
  VerifyOptions verify;
  bool bench = false;    // measure after a passed verification
  MeasureOptions measure;
  bool baseline = false; // also measure the problem's baseline (OpenBLAS for gemm)
  [[nodiscard]] nlohmann::json to_json() const;
  static EvalRequest from_json(const nlohmann::json& j);
};

struct EvalResult {
  Disposition disposition = Disposition::crashed;
  std::string error;            // why it did not pass, in words
  std::string compile_log;
  std::string problem, kernel, backend, device;
  Sizes sizes;
  Scalars scalars;              // the values the user fixed
  ParamValues params;           // the full configuration that ran
  DType dtype = DType::fp32;
  double compile_s = 0;
  bool compiled = false;        // the compile gate was passed (also when the backend cannot launch here)
  CompilerResources resources;  // what the compiler reports the kernel uses (cuda, opencl)
  std::optional<VerifyReport> verify;
  std::optional<Timing> timing;
  double gflops = 0, gbytes_s = 0;
  std::optional<Roofline> roofline;      // against the cached ceilings (the best ever measured)
  std::optional<Roofline> roofline_now;  // --roof-now: against the memory roof measured next to the timing
  std::optional<Bandwidth> bandwidth_now;  // that roof: STREAM's figures, before and after, best of each
  double roof_now_change = 1;  // the largest ratio of a figure's before and after sides (1: steady)
  // Empty unless the result beat the cached roof and the speed-of-light gate measured the roof
  // again before judging it: what it measured, and how (roofline is then against that roof).
  std::string roof_remeasured;
  std::optional<Timing> baseline;
  std::string baseline_name;
  // Joules per run beside the time: measured (RAPL) where readable, else the model; the
  // source says which (kforge/energy.hpp).
  std::optional<Energy> energy;
  [[nodiscard]] bool passed() const { return disposition == Disposition::passed; }
  [[nodiscard]] double speedup() const;  // baseline median / kernel median; 0 if either is missing
  [[nodiscard]] nlohmann::json to_json() const;
  static EvalResult from_json(const nlohmann::json& j);
};

// What a kernel's source sees: each parameter as `#define NAME value`, and KF_DTYPE_<DTYPE>.
[[nodiscard]] Defines defines_for(const ParamValues& params, DType t);

// The compiler's figures as JSON ({"reported_by": ..., "registers": ...}), unknown ones left out.
[[nodiscard]] nlohmann::json resources_json(const CompilerResources& r);

// Runs in this process: for kforge's own kernels, which are trusted not to crash it.
// `before_first_launch` (the worker's sandbox) is called once the kernel is compiled and loaded
// and what kforge's own code needs from outside the process is at hand (the ceilings, the
// micro-benchmarks' modules, when timing), before the kernel first runs; not when a gate fails
// before that.
[[nodiscard]] EvalResult evaluate(const EvalRequest& req, Backend& backend,
                                  const std::function<void()>& before_first_launch = {});

// Runs in a kforge-worker subprocess under `limits`: for any source not built into kforge.
// A segfault, an abort, an endless loop or a memory hog becomes a disposition.
struct IsolationLimits {
  double timeout_s = 120;
  long long memory_bytes = 8ll << 30;  // address space; not applied to cuda (see isolate.cpp)
  // The worker's seccomp sandbox (sandbox.hpp); off: `kforge eval --no-sandbox`, or
  // KFORGE_NO_SANDBOX=1 in the environment (read by the worker), for debugging.
  bool sandbox = true;
};
[[nodiscard]] EvalResult evaluate_isolated(const EvalRequest& req, const IsolationLimits& limits = {});

}  // namespace kforge
