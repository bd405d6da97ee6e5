// `kforge verify` and `kforge bench`: a library kernel through the gates, on each backend named.
#include "cli/commands.hpp"

#include <algorithm>

#include "cli/bench_store.hpp"
#include "cli/common.hpp"
#include "cli/compare.hpp"
#include "cli/measure_flags.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/problem.hpp"

namespace kforge::cli {

namespace {
void add_run(CLI::App& app, int& code, const char* name, const char* help, bool bench) {
  auto* cmd = app.add_subcommand(name, help);
  auto o = std::make_shared<InstanceOptions>();
  o->add_to(*cmd);
  auto no_baseline = std::make_shared<bool>(false);
  if (bench) cmd->add_flag("--no-baseline", *no_baseline, "do not time the problem's baseline (OpenBLAS for gemm)");
  auto measure = std::make_shared<MeasureFlags>();  // bench: cold/hot, stopping rule
  auto compare = std::make_shared<std::vector<std::string>>();
  if (bench) {
    measure->add_to(*cmd);
    cmd->add_option("--compare", *compare,
                    "A.json B.json: whether two `bench --json` results differ beyond noise "
                    "(Mann-Whitney U on their samples; the p-value and the ratio of medians)")
        ->expected(2);
    cmd->get_option("problem")->required(false);
  }
  auto store = std::make_shared<BenchStoreOptions>();  // bench: tuned parameters from the store
  if (bench) store->add_to(*cmd);
  auto kernels = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--kernel", *kernels,
                  "the library kernel to run, by its spec's name (`kforge list --problem P` lists them), one per "
                  "backend language, e.g. spmm_adaptive.cpu,spmm.opencl; default: the one the library picks at "
                  "these sizes")
      ->delimiter(',');
  auto tsan = std::make_shared<bool>(false);
  if (!bench)
    cmd->add_flag("--tsan,--race-worker", *tsan, "thorough: after a pass, the race worker runs the kernel once more "
                                   "(cpu: built with ThreadSanitizer, each block on a thread of its own; opencl: on "
                                   "Oclgrind); a data race is `nondeterministic`, check `race`");
  cmd->callback([o, no_baseline, bench, store, measure, compare, tsan, kernels, &code] {
    if (!compare->empty()) {
      code = compare_result_files((*compare)[0], (*compare)[1], o->json);
      return;
    }
    if (o->problem.empty()) throw UsageError("name a problem (see `kforge list`), or --compare A.json B.json");
    if (*tsan && o->quick) throw UsageError("--tsan is a thorough check: drop --quick");
    std::vector<ParamsSource> sources;
    const auto problem = find_problem(o->problem);
    const auto names = backend_list(o->backends);
    // The kernel each backend runs: the one named with --kernel, else the library's pick at the
    // sizes. Every name must be used: `--backend cpu --kernel spmm.opencl` is refused, not ignored.
    std::vector<KernelSpec> picked;
    std::vector<decltype(make_backend(names.front(), {}))> backends;
    const Sizes sizes = problem->resolve_sizes(parse_assignments(o->sizes));
    for (const auto& name : names) {
      backends.push_back(make_backend(name, {.threads = o->threads}));
      const Lang lang = backends.back()->lang();
      picked.push_back(kernels->empty() ? library_kernel(*problem, lang, sizes)
                                        : library_kernel_named(*problem, lang, *kernels));
    }
    for (const auto& k : *kernels)
      if (std::none_of(picked.begin(), picked.end(), [&](const KernelSpec& p) { return p.name == k; }))
        throw UsageError("--kernel " + k + " is a kernel for a backend not asked for (--backend " + o->backends +
                         "): add its backend, or drop the name");
    std::vector<EvalResult> results;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const auto& name = names[i];
      auto& backend = backends[i];
      EvalRequest req = make_request(*o, *problem, picked[i], name);
      req.bench = bench;
      req.baseline = bench && !*no_baseline;
      if (bench) measure->apply(req.measure);
      if (bench) sources.push_back(store->choose(req, *backend, o->params));
      // A problem file's kernels are not kforge's own: they run in an isolated worker.
      if (*tsan && (name == "cpu" || name == "opencl")) req.verify.tsan = true;  // cuda: no race worker
      if (!problem->source_file().empty()) {
        results.push_back(evaluate_isolated(req));  // the race worker runs inside, after a pass
        continue;
      }
      results.push_back(evaluate(req, *backend));  // the race worker runs inside, after a pass
    }
    if (bench) print_results_with_source(results, sources, o->json);
    else print_results(results, o->json, bench);
    code = exit_code(results);
  });
}
}  // namespace

void add_verify_and_bench(CLI::App& app, int& code) {
  add_run(app, code, "verify", "check a library kernel against the double-precision reference", false);
  add_run(app, code, "bench", "verify, then time a library kernel (with its baseline and SOL)", true);
}

}  // namespace kforge::cli
