#include "cli/common.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge::cli {

void InstanceOptions::add_to(CLI::App& app, bool problem_positional) {
  if (problem_positional) app.add_option("problem", problem, "problem name (see `kforge list`)")->required();
  app.add_option("--backend,-b", backends, "cpu, opencl, cuda, a comma-separated list, or all")
      ->capture_default_str();
  app.add_option("--size,-s", sizes, "sizes, e.g. M=1000,N=1000,K=999 (unnamed ones keep their defaults)");
  app.add_option("--scalar", scalars, "scalar values, e.g. gamma=0.99,lambda=0.95 (the others keep "
                 "each verification trial's values; `kforge list` names them)");
  app.add_option("--dtype", dtype, "fp32, fp16 or bf16 (fp16/bf16 accumulate in fp32)")->capture_default_str();
  app.add_option("--params,-p", params, "kernel parameters, e.g. MR=6,NV=2 (the rest keep their defaults)");
  app.add_option("--threads", threads, "cpu backend threads (0: all cores)")->capture_default_str();
  app.add_option("--trials", trials, "verification trials at the requested sizes, each with fresh inputs "
                 "(default: 3 thorough, 2 quick)");
  auto* q = app.add_flag("--quick{true}", quick, "quick verification: trials at the requested sizes only");
  app.add_flag("--thorough{false}", quick, "thorough verification (default, except for tune): also "
               "determinism, perturbation and fuzzed shapes")->excludes(q);
  app.add_option("--seed", seed, "seed of the input generator")->capture_default_str();
  app.add_flag("--bitwise", bitwise, "the kernel claims bitwise determinism: thorough verification's repeats "
               "(other thread counts and block orders) must equal the first run bit for bit");
  // Callbacks, not a bound int: left alone, index_width keeps -1 (the command's default).
  auto* iw = app.add_flag_callback("--index-width", [this] { index_width = 1; },
                                   "thorough verification also runs the index_width check (one input past 2^31 "
                                   "elements: 8 GiB of mostly unbacked address space for gemm fp32, seconds; the "
                                   "row-wise families also write an output past 2^31 elements, 8 GiB in fp32 "
                                   "(4 in bf16) where available, else a folded proxy; the default for `eval`, "
                                   "off for the library's kernels)");
  app.add_flag_callback("--no-index-width", [this] { index_width = 0; },
                        "thorough verification without the index_width check")->excludes(iw);
  app.add_flag("--json", json, "print one JSON document instead of a table");
  app.add_option("--formula", formula, "with problem lazy_reduce: f(x,y) reduced over y, e.g. "
                 "'exp(-sqdist(x,y)/s)' (docs/lazy-reduce.md)");
  app.add_option("--reduce", reduce, "with --formula: sum, logsumexp, min, argmin or kmin")->capture_default_str();
  app.add_option("--grad", grad, "with --formula: the reduction's gradient in x or y (sum, logsumexp, min, kmin) or b (sum) "
                 "(docs/lazy-reduce.md)")->check(CLI::IsMember({"x", "y", "b"}));
  app.parse_complete_callback([this] {
    if (formula.empty() && !grad.empty())
      throw UsageError("--grad goes with --formula: kforge verify lazy_reduce --formula 'exp(-sqdist(x,y)/s)' --grad x");
    if (formula.empty()) return;
    if (problem != "lazy_reduce")
      throw UsageError("--formula goes with problem lazy_reduce (got '" + problem + "'): kforge verify lazy_reduce --formula 'exp(-sqdist(x,y)/s)' --reduce sum");
    if (!grad.empty() && reduce == "argmin")
      throw UsageError("--grad " + grad + " with --reduce argmin: indices have no gradient; use --reduce min (the "
                       "gradient through the argmin)");
    if (grad == "b" && reduce != "sum")
      throw UsageError("--grad b with --reduce " + reduce + ": " + reduce + " has no weights b; use --grad x or y");
    problem = "lazy_reduce:" + (grad.empty() ? "" : "grad_" + grad + ":") + reduce + ":" + formula;
  });
}

std::vector<std::string> backend_list(const std::string& spec) {
  if (spec != "all") return split(spec, ',');
  std::vector<std::string> out;
  for (const auto& name : backend_names())
    if (make_backend(name)->can_run()) out.push_back(name);
  return out;
}

EvalRequest make_request(const InstanceOptions& o, const Problem& p, const KernelSpec& kernel,
                         const std::string& backend) {
  EvalRequest r;
  r.problem = p.name();
  r.kernel = kernel;
  r.sizes = p.resolve_sizes(parse_assignments(o.sizes));
  r.scalars = p.resolve_scalars(parse_real_assignments(o.scalars));
  r.dtype = parse_dtype(o.dtype);
  r.params = parse_assignments(o.params);
  (void)kernel.resolve(r.params);  // names a parameter the kernel lacks: a usage error, now
  r.backend = backend;
  r.backend_options.threads = o.threads;
  if (o.trials < 0) throw UsageError("--trials must be at least 1 (or 0 for the default)");
  r.verify.trials = o.trials;
  r.verify.thorough = !o.quick;
  r.verify.seed = o.seed;
  r.verify.bitwise_repeats = o.bitwise;
  r.verify.index_width = o.index_width == 1;
  return r;
}

std::string format_sizes(const Sizes& s) {
  std::string out;
  for (const auto& [k, v] : s) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

std::string format_params(const ParamValues& p) { return p.empty() ? "-" : format_sizes(p); }

std::string format_scalars(const Scalars& s) {
  std::string out;
  for (const auto& [k, v] : s) out += fmt::format("{}{}={}", out.empty() ? "  scalars " : ",", k, v);
  return out;
}

void print_results(const std::vector<EvalResult>& results, bool json, bool bench) {
  if (json) {
    if (results.size() == 1) {
      fmt::print("{}\n", results[0].to_json().dump(2));
    } else {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& r : results) a.push_back(r.to_json());
      fmt::print("{}\n", a.dump(2));
    }
    return;
  }
  for (const auto& r : results) {
    fmt::print("{} {} on {} [{}]\n", r.problem, r.kernel, r.backend, r.device);
    fmt::print("  sizes {}  dtype {}  params {}{}\n", format_sizes(r.sizes), dtype_name(r.dtype),
               format_params(r.params), format_scalars(r.scalars));
    fmt::print("  disposition: {}\n", disposition_name(r.disposition));
    if (!r.passed()) fmt::print("  error: {}\n", r.error);
    if (!r.compile_log.empty() && r.disposition == Disposition::compile_error)
      fmt::print("  compiler said:\n{}\n", r.compile_log.substr(0, 4000));
    if (r.resources.known()) {
      std::string uses;
      const nlohmann::json figures = resources_json(r.resources);
      for (const auto& [name, v] : figures.items())
        if (name != "reported_by") uses += fmt::format(" {}={}", name, v.dump());
      fmt::print("  resources ({}):{}\n", r.resources.reported_by, uses);
    }
    if (r.verify) {
      fmt::print("  verify: {} run(s) checked, {} fuzzed shape(s), max abs error {:.3g}, rel Frobenius {:.3g}, "
                 "worst error/bound {:.3g}\n",
                 r.verify->trials_run, r.verify->shapes_tried.size(), r.verify->worst.max_abs_error,
                 r.verify->worst.rel_frobenius_error, r.verify->worst.max_bound_ratio);
      std::string checks;
      for (const auto& c : r.verify->checks) checks += fmt::format(" {}:{}", c.name, c.passed ? "ok" : "FAILED");
      fmt::print("  checks:{}\n", checks);
      if (!r.verify->passed) fmt::print("  replay: --seed {}\n", r.verify->seed);
    }
    if (bench && r.timing) {
      fmt::print("  time: median {:.4g} ms, min {:.4g} ms, stdev {:.2g} ms over {} runs, {} outlier(s); {}{}\n",
                 r.timing->median_s * 1e3, r.timing->min_s * 1e3, r.timing->stdev_s * 1e3,
                 r.timing->repetitions(), r.timing->outliers, r.timing->stop_reason,
                 r.timing->noise_target_met ? "" : " (noise target not met)");
      fmt::print("  {:.2f} GFLOP/s, {:.2f} GB/s", r.gflops, r.gbytes_s);
      if (r.roofline)
        fmt::print(", speed of light {:.1f}% ({}-bound, {} roof){}", 100 * r.roofline->sol_fraction,
                   r.roofline->bound, r.roofline->memory_roof,
                   r.roofline->score ? fmt::format(", SOL score {:.3f}", *r.roofline->score) : "");
      fmt::print("\n");
      if (r.roofline_now && r.bandwidth_now)
        fmt::print("  roof now (measured before and after): read {:.1f}, write {:.1f}, copy {:.1f}, triad "
                   "{:.1f} GB/s -> speed of light {:.1f}% ({} roof)\n",
                   r.bandwidth_now->read * 1e-9, r.bandwidth_now->write * 1e-9, r.bandwidth_now->copy * 1e-9,
                   r.bandwidth_now->triad * 1e-9, 100 * r.roofline_now->sol_fraction,
                   r.roofline_now->memory_roof);
      if (r.roofline_now && r.roof_now_change > 1.25)
        fmt::print("  the roof changed {:.2f}x between before and after: the load changed during the run; "
                   "repeat it\n", r.roof_now_change);
      if (r.baseline)
        fmt::print("  {}: median {:.4g} ms -> the kernel runs at {:.2f}x its speed\n", r.baseline_name,
                   r.baseline->median_s * 1e3, r.speedup());
    }
  }
}

int exit_code(const std::vector<EvalResult>& results) {
  for (const auto& r : results)
    if (!r.passed()) return kExitFailedGate;
  return kExitPassed;
}

void progress(const std::string& what, int done, int total) {
  if (!isatty(2)) return;
  const int width = 30, filled = total > 0 ? width * done / total : width;
  fmt::print(stderr, "\r{} [{}{}] {}/{}", what, std::string(filled, '#'), std::string(width - filled, '.'),
             done, total);
  if (done >= total) fmt::print(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace kforge::cli
