#include "kforge/evaluate.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>

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
  }
  return "?";
}

Disposition parse_disposition(std::string_view s) {
  for (Disposition d : {Disposition::passed, Disposition::incorrect, Disposition::compile_error,
                        Disposition::crashed, Disposition::timeout, Disposition::invalid_config,
                        Disposition::not_supported})
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
Instance bench_instance(const Problem& p, const EvalRequest& req) {
  return p.make_instance(req.sizes, req.dtype, Distribution::normal, req.verify.seed ^ 0xbe9c4ull, 1);
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
  const KernelCall call = [&](const Instance& inst, bool poison_inout,
                              std::vector<std::vector<bool>>& unwritten) {
    runner.load(inst, poison_inout);
    runner.launch();
    return runner.outputs(unwritten);
  };
  try {
    r.verify = verify(*problem, req.sizes, req.dtype, call, req.verify);
  } catch (const LaunchError& e) {
    r.disposition = Disposition::crashed;
    r.error = std::string("launch failed: ") + e.what();
    return;
  }
  if (!r.verify->passed) {
    r.disposition = Disposition::incorrect;
    r.error = r.verify->failure;
    return;
  }
  r.disposition = Disposition::passed;
  if (!req.bench) return;

  const Instance inst = bench_instance(*problem, req);
  runner.load(inst, false);
  const std::function<double()> kernel_once = [&] { return runner.launch(); };
  std::function<void()> base = req.baseline ? problem->baseline(inst, req.backend_options.threads)
                                            : std::function<void()>{};
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
    r.baseline_name = problem->baseline_name();
  } else {
    r.timing = measure(kernel_once, req.measure);
  }
  const double flops = problem->flops(req.sizes), bytes = problem->bytes(req.sizes, req.dtype);
  r.gflops = flops / r.timing->median_s * 1e-9;
  r.gbytes_s = bytes / r.timing->median_s * 1e-9;
  r.roofline = roofline(ceilings(backend), req.dtype, flops, bytes, r.timing->median_s,
                        r.baseline ? r.baseline->median_s : 0.0, !req.measure.cold);
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
