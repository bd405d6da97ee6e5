#include "kforge/evaluate.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>

#include <fmt/format.h>

#include "eval/runner.hpp"
#include "kforge/error.hpp"
#include "kforge/problem.hpp"

namespace kforge {

std::string_view disposition_name(Disposition d) {
  switch (d) {
    case Disposition::passed: return "passed";
    case Disposition::incorrect: return "incorrect";
    case Disposition::compile_error: return "compile_error";
    case Disposition::crashed: return "crashed";
    case Disposition::timeout: return "timeout";
    case Disposition::invalid_config: return "invalid_config";
    case Disposition::not_supported: return "not_supported";
    case Disposition::nondeterministic: return "nondeterministic";
    case Disposition::suspect: return "suspect";
  }
  return "?";
}

Disposition parse_disposition(std::string_view s) {
  for (Disposition d : {Disposition::passed, Disposition::incorrect, Disposition::compile_error,
                        Disposition::crashed, Disposition::timeout, Disposition::invalid_config,
                        Disposition::not_supported, Disposition::nondeterministic, Disposition::suspect})
    if (disposition_name(d) == s) return d;
  throw UsageError("unknown disposition '" + std::string(s) + "'");
}

namespace {

Defines defines_for(const ParamValues& params, DType t) {
  Defines d;
  for (const auto& [k, v] : params) d.emplace_back(k, std::to_string(v));
  std::string tag(dtype_name(t));
  std::transform(tag.begin(), tag.end(), tag.begin(), [](unsigned char c) { return std::toupper(c); });
  d.emplace_back("KF_DTYPE_" + tag, "1");
  return d;
}

// The instance that timed runs use: normal inputs, the problem's reading scalars (trial 1).
std::string inst_key(const EvalRequest& req) {
  std::string key = fmt::format("{}|{}|{}", req.problem, dtype_name(req.dtype), req.verify.seed);
  for (const auto& [k, v] : req.sizes) key += fmt::format("|{}={}", k, v);
  return key;
}

Instance bench_instance(const Problem& p, const EvalRequest& req) {
  return p.make_instance(req.sizes, req.dtype, Distribution::normal, req.verify.seed ^ 0xbe9c4ull, 1);
}

// The timed runs: every one starts from the loaded state (outputs poisoned again, untimed), and
// the last one's outputs are verified, so a kernel cannot be right when checked and fast (and
// wrong) when timed. A time beyond the measured speed of light is suspect, never a win.
void time_and_check(const EvalRequest& req, Backend& backend, const Problem& problem,
                    KernelRunner& runner, EvalResult& r) {
  const Instance inst = bench_instance(problem, req);
  runner.load(inst, !problem.reads_inout(inst));
  // --cold: copies of the inputs, together over 4x the last-level cache, taken in turn.
  const int copies = req.measure.cold ? cold_copies(problem.bytes(req.sizes, req.dtype),
                                                    static_cast<double>(ceilings(backend).llc_bytes))
                                      : 1;
  std::vector<std::unique_ptr<KernelRunner>> spare;
  for (int i = 1; i < copies; ++i) {
    spare.push_back(std::make_unique<KernelRunner>(runner.sibling()));
    spare.back()->load(inst, !problem.reads_inout(inst));
  }
  std::size_t turn = 0;
  const std::function<double()> kernel_once = [&] {
    KernelRunner& x = turn == 0 ? runner : *spare[turn - 1];
    turn = (turn + 1) % copies;
    x.restore_outputs();
    return x.launch();
  };
  std::function<void()> base = req.baseline ? problem.baseline(inst, req.backend_options.threads)
                                            : std::function<void()>{};
  if (base && copies > 1) {
    std::vector<std::function<void()>> bases{base};
    for (int i = 1; i < copies; ++i) bases.push_back(problem.baseline(inst, req.backend_options.threads));
    base = rotation(std::move(bases));
  }
  if (base) {
    // Interleaved with the kernel, so both see the same machine.
    const std::function<double()> base_once = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      base();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    PairTiming pt = measure_pair(kernel_once, base_once, req.measure);
    r.timing = std::move(pt.a);
    r.baseline = std::move(pt.b);
    r.baseline_name = problem.baseline_name();
  } else {
    r.timing = measure(kernel_once, req.measure);
  }

  const auto ref = reference_for(problem, inst, "timed|" + inst_key(req));
  const Comparison c = compare(problem, inst, runner.outputs(), ref->out, ref->magnitude);
  r.verify->checks.push_back({"timed_outputs", c.passed,
                              c.passed ? "the last timed run's outputs pass" : c.failure});
  if (!c.passed) {
    r.disposition = Disposition::incorrect;
    r.verify->passed = false;
    r.verify->failed_check = "timed_outputs";
    r.verify->failed_sizes = req.sizes;
    r.error = "timed_outputs: the timed runs' outputs are wrong (" + c.failed_check + "): " + c.failure;
    return;
  }

  const double flops = problem.flops(req.sizes), bytes = problem.bytes(req.sizes, req.dtype);
  r.gflops = flops / r.timing->median_s * 1e-9;
  r.gbytes_s = bytes / r.timing->median_s * 1e-9;
  const double base_s = r.baseline ? r.baseline->median_s : 0.0;  // for the SOL score
  r.roofline = roofline(ceilings(backend), req.dtype, flops, bytes, r.timing->median_s, base_s,
                        !req.measure.cold);
  // Beyond the ceilings by more than the noise: first suspect the ceilings (measured under
  // another load, perhaps), then the kernel.
  const double noise = std::max(0.05, 3 * r.timing->stdev_s / r.timing->median_s);
  if (r.roofline->sol_fraction > 1 + noise)
    r.roofline = roofline(ceilings(backend, true), req.dtype, flops, bytes, r.timing->median_s,
                          base_s, !req.measure.cold);
  const bool suspect = r.roofline->sol_fraction > 1 + noise;
  r.verify->checks.push_back({"speed_of_light", !suspect,
                              fmt::format("{:.1f}% of the measured speed of light ({}-bound)",
                                          100 * r.roofline->sol_fraction, r.roofline->bound)});
  if (suspect) {
    r.disposition = Disposition::suspect;
    r.verify->failed_check = "speed_of_light";
    r.error = fmt::format("suspect: {:.2f}x the measured speed of light, beyond the noise ({:.0f}%); the "
                          "kernel probably skips work (or the ceilings are wrong: kforge ceilings --remeasure)",
                          r.roofline->sol_fraction, 100 * noise);
  }
}

void run_gates(const EvalRequest& req, Backend& backend, EvalResult& r) {
  const auto problem = find_problem(req.problem);
  const KernelSpec& k = req.kernel;
  if (k.lang != backend.lang()) {
    r.disposition = Disposition::not_supported;
    r.error = "the " + backend.name() + " backend runs " + std::string(lang_name(backend.lang())) +
              " sources, not " + std::string(lang_name(k.lang));
    return;
  }
  if (std::find(k.dtypes.begin(), k.dtypes.end(), req.dtype) == k.dtypes.end()) {
    r.disposition = Disposition::not_supported;
    r.error = "kernel " + k.name + " does not support dtype " + std::string(dtype_name(req.dtype));
    return;
  }
  r.params = k.resolve(req.params);
  if (auto why = k.check(r.params, req.sizes)) {
    r.disposition = Disposition::invalid_config;
    r.error = *why;
    return;
  }
  const LaunchGeometry geometry = k.geometry(r.params, req.sizes);
  std::shared_ptr<Module> module;
  try {
    module = backend.compile(k.source, k.entry, defines_for(r.params, req.dtype));
  } catch (const CompileError& e) {
    r.disposition = Disposition::compile_error;
    r.error = e.what();
    r.compile_log = e.log;
    return;
  }
  r.compile_s = module->compile_s;
  r.compile_log = module->log;
  if (!backend.can_run()) {
    r.disposition = Disposition::not_supported;
    r.error = "compiled, but the " + backend.name() + " backend cannot launch on this machine (" +
              backend.device() + ")";
    return;
  }

  KernelRunner runner(backend, *module, *problem, geometry);
  const KernelCall call = [&](const Instance& inst, bool poison_inout) {
    runner.set_geometry(k.geometry(r.params, inst.sizes));  // fuzzed shapes launch their own grid
    runner.load(inst, poison_inout);
    runner.launch();
    return runner.outputs();
  };
  VerifyOptions vo = req.verify;
  for (const auto& [name, v] : r.params) vo.tile_hints.push_back(v);
  vo.supports = [&](const Sizes& s) { return !k.check(r.params, s); };
  try {
    r.verify = verify(*problem, req.sizes, req.dtype, call, vo);
  } catch (const LaunchError& e) {
    r.disposition = Disposition::crashed;
    r.error = std::string("launch failed: ") + e.what();
    return;
  }
  if (!r.verify->passed) {
    r.disposition = r.verify->nondeterministic() ? Disposition::nondeterministic : Disposition::incorrect;
    r.error = r.verify->failure;
    return;
  }
  r.disposition = Disposition::passed;
  if (!req.bench) return;
  runner.set_geometry(geometry);
  time_and_check(req, backend, *problem, runner, r);
}

}  // namespace

EvalResult evaluate(const EvalRequest& req, Backend& backend) {
  EvalResult r;
  r.problem = req.problem;
  r.kernel = req.kernel.name;
  r.backend = backend.name();
  r.device = backend.device();
  r.sizes = req.sizes;
  r.dtype = req.dtype;
  r.params = req.params;
  try {
    run_gates(req, backend, r);
  } catch (const NotSupported& e) {
    r.disposition = Disposition::not_supported;
    r.error = e.what();
  }
  return r;
}

double EvalResult::speedup() const {
  if (!timing || !baseline || timing->median_s <= 0) return 0;
  return baseline->median_s / timing->median_s;
}

}  // namespace kforge
