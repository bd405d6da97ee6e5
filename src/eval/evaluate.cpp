#include "kforge/evaluate.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "eval/energy_plan.hpp"
#include "eval/runner.hpp"
#include "eval/sol_gate.hpp"
#include "eval/tsan_probe.hpp"
#include "eval/worker_path.hpp"
#include "kforge/alternative_answers.hpp"
#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/problem_file.hpp"
#include "problem/file_problem.hpp"

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

Defines defines_for(const ParamValues& params, DType t) {
  Defines d;
  for (const auto& [k, v] : params) d.emplace_back(k, std::to_string(v));
  std::string tag(dtype_name(t));
  std::transform(tag.begin(), tag.end(), tag.begin(), [](unsigned char c) { return std::toupper(c); });
  d.emplace_back("KF_DTYPE_" + tag, "1");
  return d;
}

namespace {

// The instance that timed runs use: normal inputs, the problem's reading scalars (trial 1).
std::string inst_key(const EvalRequest& req) {
  std::string key = fmt::format("{}|{}|{}", req.problem, dtype_name(req.dtype), req.verify.seed);
  for (const auto& [k, v] : req.sizes) key += fmt::format("|{}={}", k, v);
  for (const auto& [k, v] : req.scalars) key += fmt::format("|{}={}", k, v);
  return key;
}

Instance bench_instance(const Problem& p, const EvalRequest& req) {
  return p.make_instance(req.sizes, req.dtype, Distribution::normal, req.verify.seed ^ 0xbe9c4ull, 1,
                         req.scalars);
}

// Every timed run's outputs are checked, outside the timing: each run's tensors are
// fingerprinted and each distinct result is kept, to be compared with the reference once the
// timed runs are over (a deterministic kernel has one). The reference is computed only then, so
// that no timed run can find it in the process's memory and copy it; and a kernel cannot be
// right on one run and wrong on the others.
class TimedRunCheck {
 public:
  TimedRunCheck(const Problem& p, const Instance& inst, std::string ref_key)
      : problem_(p), inst_(inst), ref_key_(std::move(ref_key)) {}

  void after_run(KernelRunner& x) {
    ++runs_;
    if (static_cast<int>(seen_.size()) >= kMaxDistinct || held_bytes_ > kMaxHeldBytes) return;
    if (!seen_.insert(x.fingerprint()).second) return;
    held_.push_back({runs_, x.outputs()});
    for (const auto& t : held_.back().second.tensors) held_bytes_ += t.size() * (sizeof(double) + 1);
  }
  // After the last timed run: the reference, and every distinct result compared with it.
  void finish() {
    const auto ref = reference_for(problem_, inst_, ref_key_);
    for (auto& [run, out] : held_) {
      // As verification does: a problem with several right answers (kernel_kmeans' labels at a
      // true near-tie) accepts the run's own choice there.
      std::vector<std::vector<double>> accepted;
      if (const auto* alt = dynamic_cast<const AlternativeAnswers*>(&problem_)) {
        accepted = ref->out;
        alt->accept_alternatives(inst_, out.tensors, accepted);
      }
      Comparison c = compare(problem_, inst_, out, accepted.empty() ? ref->out : accepted, ref->magnitude);
      if (!c.passed) {
        failure_ = std::move(c);
        failed_run_ = run;
        break;
      }
    }
    held_.clear();
  }
  [[nodiscard]] const std::optional<Comparison>& failure() const { return failure_; }
  [[nodiscard]] std::string summary() const {
    if (failure_) return fmt::format("timed run {} of {} is wrong ({}): {}", failed_run_, runs_,
                                     failure_->failed_check, failure_->failure);
    const bool all = static_cast<int>(seen_.size()) < kMaxDistinct && held_bytes_ <= kMaxHeldBytes;
    return fmt::format("all {} timed runs' outputs pass ({} distinct result{}{})", runs_, seen_.size(),
                       seen_.size() == 1 ? "" : "s", all ? "" : ", the first ones checked");
  }

 private:
  static constexpr int kMaxDistinct = 8;  // a racy kernel differs every run: check a few
  static constexpr std::size_t kMaxHeldBytes = std::size_t{512} << 20;  // the first always held
  const Problem& problem_;
  const Instance& inst_;
  std::string ref_key_;
  std::set<std::uint64_t> seen_;
  std::vector<std::pair<int, KernelOutput>> held_;  // (run, its outputs), one per distinct result
  std::size_t held_bytes_ = 0;
  std::optional<Comparison> failure_;
  int runs_ = 0, failed_run_ = 0;
};

// The timed runs: every one starts from the loaded state (outputs poisoned again, untimed), and
// every one's outputs are verified (TimedRunCheck). A time beyond the measured speed of light is
// suspect, never a win.
void time_and_check(const EvalRequest& req, Backend& backend, const Problem& problem,
                    KernelRunner& runner, EvalResult& r) {
  const Instance inst = bench_instance(problem, req);
  TimedRunCheck checked(problem, inst, "timed|" + inst_key(req));
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
  // Energy: the RAPL counters read just before and just after each run (warm-up included),
  // so the checks between runs are not charged; the mean per run is reported. A device counter
  // (NVML) steps too coarsely for that: it reads a batch of runs after the timed ones.
  const EnergyPlan energy = plan_energy(backend);
  const std::optional<EnergyReader>& meter = energy.rapl;
  double metered_j = 0;
  int metered_runs = 0;
  const std::function<double()> kernel_once = [&] {
    KernelRunner& x = turn == 0 ? runner : *spare[turn - 1];
    turn = (turn + 1) % copies;
    x.restore_outputs();
    const auto before = meter ? meter->read() : std::vector<std::uint64_t>{};
    const double seconds = x.launch();
    if (meter) metered_j += meter->joules_between(before, meter->read()), ++metered_runs;
    checked.after_run(x);
    return seconds;
  };
  std::function<void()> base = req.baseline ? problem.baseline(inst, req.backend_options.threads)
                                            : std::function<void()>{};
  if (base && copies > 1) {
    std::vector<std::function<void()>> bases{base};
    for (int i = 1; i < copies; ++i) bases.push_back(problem.baseline(inst, req.backend_options.threads));
    base = rotation(std::move(bases));
  }
  // --roof-now: the memory roof of this minute, measured just before and just after the timed
  // runs (best of each figure), for a speed of light that a neighbour's traffic does not skew.
  const double bytes = problem.bytes(req.sizes, req.dtype);
  const MemoryLevel level = ceilings(backend).memory_level(bytes, !req.measure.cold);
  const auto sample_roof = [&] {
    if (!req.measure.roof_now) return;
    const Bandwidth now = measure_bandwidth(backend, level);
    if (!r.bandwidth_now) {
      r.bandwidth_now = now;
      return;
    }
    // How far the two sides disagree: a neighbour that started or stopped during the run.
    const Bandwidth& before = *r.bandwidth_now;
    for (auto [a, b] : {std::pair{before.read, now.read}, std::pair{before.write, now.write},
                        std::pair{before.copy, now.copy}, std::pair{before.triad, now.triad}})
      if (a > 0 && b > 0) r.roof_now_change = std::max(r.roof_now_change, std::max(a, b) / std::min(a, b));
    r.bandwidth_now->keep_best(now);
  };
  sample_roof();
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
  sample_roof();
  checked.finish();

  r.verify->checks.push_back({"timed_outputs", !checked.failure(), checked.summary()});
  if (checked.failure()) {
    r.disposition = Disposition::incorrect;
    r.verify->passed = false;
    r.verify->failed_check = "timed_outputs";
    r.verify->failed_sizes = req.sizes;
    r.error = "timed_outputs: " + checked.summary();
    return;
  }

  const double flops = problem.flops(req.sizes);
  const double written = std::min(bytes, problem.bytes_written(inst));
  if (energy.device) {
    // Back to back, outputs put back only where the kernel reads them: the window holds the
    // kernel's runs, not the verifier's copies. A scratch tensor is poisoned again before every
    // run even here, so no run can start from what the previous one left (its cost, a write of
    // the workspace, is in the window: the price of that promise).
    const bool inout = problem.reads_inout(inst), scratch = runner.has_scratch();
    const auto run_once = [&] {
      if (inout) runner.restore_outputs();
      else if (scratch) runner.restore_scratch();
      (void)runner.launch();
    };
    std::string why;
    std::optional<BatchEnergy> b;
    try {
      b = measure_batch_energy(*energy.device, run_once, EnergyBatchOptions{}, &why);
    } catch (const std::exception& e) {
      why = e.what();
    }
    // Unmeasured rather than modelled: a model value would be mixed with measured ones.
    if (b)
      r.energy = Energy{b->joules_per_run, "measured",
                        fmt::format("{}, {} mJ over {} runs in {:.0f} ms between two counter steps",
                                    energy.device->describe(), b->delta_mj, b->runs, b->window_s * 1e3)};
    else  // a check that does not gate: it says why this passed result has no energy
      r.verify->checks.push_back({"energy", true, "energy not measured: " + why});
  } else if (meter && metered_runs > 0) {
    r.energy = Energy{metered_j / metered_runs, "measured", meter->describe() + ", whole package(s), mean of " +
                                                               std::to_string(metered_runs) + " runs"};
  } else {
    // The model is a CPU model: on another backend it charges one core's static power.
    const int threads = req.backend_options.threads > 0 ? req.backend_options.threads
                                                        : static_cast<int>(std::thread::hardware_concurrency());
    const int cores = req.backend == "cpu" ? std::max(threads, 1) : 1;
    r.energy = Energy{cpu_energy_model().joules(r.timing->median_s, flops, bytes, cores), "model",
                      (energy.model_reason.empty() ? "" : energy.model_reason + "; ") +
                          cpu_energy_model().describe() + fmt::format(", {} core(s)", cores)};
  }
  r.gflops = flops / r.timing->median_s * 1e-9;
  r.gbytes_s = bytes / r.timing->median_s * 1e-9;
  const double base_s = r.baseline ? r.baseline->median_s : 0.0;  // for the SOL score
  // Beyond the ceilings by more than the noise: first suspect the ceilings (measured under
  // another load, perhaps), then the kernel (sol_gate.cpp).
  const SolJudgement sol = judge_speed_of_light(
      backend, {req.dtype, flops, bytes, written, !req.measure.cold, base_s}, *r.timing);
  r.roofline = sol.roofline;
  r.roof_remeasured = sol.remeasured;
  const bool suspect = sol.suspect;
  if (r.bandwidth_now) {
    Ceilings now = ceilings(backend);
    now.all.at(level) = *r.bandwidth_now;
    r.roofline_now = roofline_at(now, level, req.dtype, flops, bytes, r.timing->median_s, base_s, written);
  }
  r.verify->checks.push_back({"speed_of_light", !suspect, sol.detail});
  if (suspect) {
    r.disposition = Disposition::suspect;
    r.verify->failed_check = "speed_of_light";
    r.error = fmt::format("suspect: {:.2f}x the speed of light, re-measured for its data just now, beyond "
                          "{:.0f}% (its noise times the roof's own spread); the kernel probably skips work",
                          sol.judged, 100 * sol.margin);
  }
}

void run_gates(const EvalRequest& req, Backend& backend, EvalResult& r,
               const std::function<void()>& before_first_launch) {
  const auto problem = req.problem_file.empty() ? find_problem(req.problem)
                                                : load_problem_file(req.problem_file);
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
    module = backend.compile(k.source, k.entry, defines_for(r.params, req.dtype), k.source_path);
  } catch (const CompileError& e) {
    r.disposition = Disposition::compile_error;
    r.error = e.what();
    r.compile_log = e.log;
    return;
  }
  r.compiled = true;
  r.compile_s = module->compile_s;
  r.compile_log = module->log;
  r.resources = module->resources;
  if (!backend.can_run()) {
    r.disposition = Disposition::not_supported;
    r.error = "compiled, but the " + backend.name() + " backend cannot launch on this machine (" +
              backend.device() + ")";
    return;
  }

  if (before_first_launch) {
    // A problem file's reference moves out of this process (compiled on first use otherwise).
    if (const auto* fp = dynamic_cast<const FileProblem*>(problem.get())) fp->start_native_host();
    // What the timed phase needs from files or compilers, fetched while they can be reached:
    // the cached ceilings and the micro-benchmarks' modules (the speed-of-light gate measures
    // the roof again with them).
    if (req.bench) {
      (void)ceilings(backend);
      (void)plan_energy(backend);  // NVML opens device files (the backend keeps it): before the sandbox
      prepare_micro_benchmarks(backend);
    }
    before_first_launch();
  }
  KernelRunner runner(backend, *module, *problem, geometry);
  const KernelCall call = [&](const Instance& inst, bool poison_inout) {
    runner.set_geometry(k.geometry(r.params, inst.sizes));  // fuzzed shapes launch their own grid
    runner.load(inst, poison_inout);
    runner.launch();
    return runner.outputs();
  };
  VerifyOptions vo = req.verify;
  vo.scalars = req.scalars;
  vo.schedule = [&](int variant, std::uint64_t seed) { return backend.set_schedule(variant, seed); };
  vo.call_same_buffers = [&](const Instance& inst, bool poison_inout) {
    runner.set_geometry(k.geometry(r.params, inst.sizes));
    runner.refill(inst, poison_inout);
    runner.launch();
    return runner.outputs();
  };
  if (backend.sparse_buffers())
    vo.call_wide = [&](const Instance& live, const Sizes& wide, bool poison_inout, bool fold) {
      runner.set_geometry(k.geometry(r.params, wide));
      runner.load_wide(live, wide, poison_inout, fold);
      runner.launch();
      return runner.outputs();
    };
  // The ordinary schedule back whatever verification did (a throw included) before timing.
  struct OrdinarySchedule {
    Backend& b;
    ~OrdinarySchedule() { (void)b.set_schedule(0, 0); }
  } ordinary_schedule{backend};
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

EvalResult evaluate(const EvalRequest& req, Backend& backend,
                    const std::function<void()>& before_first_launch) {
  EvalResult r;
  r.problem = req.problem;
  r.kernel = req.kernel.name;
  r.backend = backend.name();
  r.device = backend.device();
  r.sizes = req.sizes;
  r.scalars = req.scalars;
  r.dtype = req.dtype;
  r.params = req.params;
  try {
    run_gates(req, backend, r, before_first_launch);
  } catch (const NotSupported& e) {
    r.disposition = Disposition::not_supported;
    r.error = e.what();
  }
  // VerifyOptions::tsan: a passed thorough verdict goes to the race worker too, wherever it was
  // reached in this process (verify, tune's candidates and winner, distributed jobs), so the
  // flag means the same everywhere. An isolated worker gets the request without it: its parent
  // starts the race worker (evaluate_isolated), a sandboxed process could not.
  if (req.verify.tsan && req.verify.thorough && r.passed()) probe_races(req, {.timeout_s = 600}, worker_path(), r);
  return r;
}

double EvalResult::speedup() const {
  if (!timing || !baseline || timing->median_s <= 0) return 0;
  return baseline->median_s / timing->median_s;
}

}  // namespace kforge
