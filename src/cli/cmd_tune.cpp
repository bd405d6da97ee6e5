// `kforge tune`: search a library kernel's space on each backend named, then time the winner
// against the problem's baseline and print one table.
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"
#include "kforge/dist.hpp"
#include "kforge/error.hpp"
#include "kforge/tune.hpp"
#include "cli/tune_extra.hpp"
#include "cli/tune_store.hpp"

namespace kforge::cli {

void add_tune(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("tune", "search a kernel's parameter space for the fastest correct configuration");
  struct Opts : InstanceOptions { std::string strategy = "bayes"; int budget = 20; std::uint64_t tune_seed = 1; TuneExtras extra; TuneStoreOptions store; bool tsan = false; };
  auto o = std::make_shared<Opts>();
  o->add_to(*cmd);
  o->quick = true;  // tuning verifies quickly; the winner is re-verified thoroughly below
  cmd->get_option("problem")->required(false);  // not with --replay
  cmd->add_option("--strategy", o->strategy, "bayes (Gaussian process), brute, random, anneal, genetic or mapelites")->capture_default_str();
  cmd->add_option("--budget", o->budget, "evaluations per backend (the default configuration included)")->capture_default_str();
  cmd->add_option("--tune-seed", o->tune_seed, "seed of the strategy")->capture_default_str();
  cmd->add_flag("--tsan,--race-worker", o->tsan, "cpu and opencl: every thorough verification (the winner's; every "
                "candidate's with --thorough) also goes to the race worker (cpu: ThreadSanitizer, each block on a "
                "thread of its own; opencl: Oclgrind); a data race is `nondeterministic`, check `race`");
  add_tune_extras(*cmd, o->extra);
  o->store.add_to(*cmd);
  cmd->callback([o, &code, cmd] {
    if (!o->extra.replay.empty()) {  // the seed of a replay: --tune-seed, else --seed, else 1
      const bool own = cmd->get_option("--tune-seed")->count() || !cmd->get_option("--seed")->count();
      code = run_replay(o->extra, o->strategy, o->budget, own ? o->tune_seed : o->seed, o->json);
      return;
    }
    if (o->problem.empty()) throw UsageError("tune needs a problem (see `kforge list`) or --replay CACHE.json");
    if (o->tsan) {
      bool cpu = false;
      for (const auto& name : backend_list(o->backends)) cpu = cpu || name == "cpu" || name == "opencl";
      if (!cpu)
        throw UsageError("--tsan (the race worker) sees cpu and opencl kernels only (--backend " + o->backends +
                         "): add cpu or opencl, or drop --tsan");
    }
    const auto problem = find_problem(o->problem);
    nlohmann::json doc = nlohmann::json::array();
    std::vector<EvalResult> winners;
    for (const auto& name : backend_list(o->backends)) {
      auto backend = make_backend(name, {.threads = o->threads});
      // --params fixes those parameters: the same as --restrict NAME=V.
      const std::string only = o->extra.restrict_values + (o->extra.restrict_values.empty() || o->params.empty() ? "" : ",") + o->params;
      const Sizes sizes = problem->resolve_sizes(parse_assignments(o->sizes));  // picks the kernel
      EvalRequest base = make_request(*o, *problem, restrict_space(library_kernel(*problem, backend->lang(), sizes), only), name);
      // Thorough verifications only (the quick candidates' level says so: store/verification_level.cpp).
      base.verify.tsan = o->tsan && (name == "cpu" || name == "opencl");
      TuneOptions to{o->strategy, o->budget, o->tune_seed, o->extra.time_limit_s, strategy_options(o->extra)};
      to.objective = o->extra.objective;
      to.isolate = !problem->source_file().empty();  // a problem file's kernels are not kforge's own
      const auto recorder = o->store.recorder(*backend);  // the results store: record, resume
      if (recorder) recorder->attach(to);
      double best_ms = 0;
      const auto search_started = std::chrono::steady_clock::now();
      // Under mpirun the ranks evaluate in parallel (kforge/dist.hpp); alone, as tune().
      const TuneResult t = dist::tune(base, *backend, to, [&](int done, int total, const EvalResult& e) {
        if (e.passed() && e.timing && (best_ms == 0 || e.timing->median_s * 1e3 < best_ms)) best_ms = e.timing->median_s * 1e3;
        progress(best_ms > 0 ? fmt::format("tune {} (best {:.4g} ms)", name, best_ms) : "tune " + name, done, total);
      });
      const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - search_started).count();
      if (!o->extra.record.empty()) {
        std::string path = o->extra.record;
        if (backend_list(o->backends).size() > 1) path.insert(path.rfind(".json") == std::string::npos ? path.size() : path.rfind(".json"), "." + name);
        write_record(path, base.kernel, base.sizes, backend->device(), t.evaluations);
      }
      if (!o->json) {
        fmt::print("{}: {} valid configurations, strategy {}, {} evaluations (stopped: {}){}{}\n", name, t.space_size,
                   o->strategy, t.evaluations.size(), t.stopped, objective_note(o->extra.objective, *backend),
                   dist::active() ? fmt::format(" on {} MPI ranks", dist::current()->size()) : "");
        print_strategy_report(o->strategy, t.strategy_report);
      }
      nlohmann::json entry = {{"backend", name}, {"device", backend->device()}, {"evaluations", nlohmann::json::array()},
                            {"strategy", o->strategy}, {"objective", o->extra.objective}, {"space_size", t.space_size}, {"stopped", t.stopped},
                            {"ranks", dist::current() ? dist::current()->size() : 1}, {"search_wall_s", search_s}};
      if (!t.strategy_report.empty()) entry["strategy_report"] = t.strategy_report;
      for (const auto& e : t.evaluations) entry["evaluations"].push_back(e.to_json());
      if (t.best >= 0) {
        // Re-verify the winner thoroughly and re-time it beside the baseline, in one go.
        EvalRequest req = base;
        req.params = t.evaluations[t.best].params;
        req.verify.thorough = true;
        req.bench = true;
        req.baseline = true;
        winners.push_back(evaluate(req, *backend));
        if (recorder) recorder->record(req, winners.back());
        entry["best"] = winners.back().to_json();
      }
      if (recorder) entry["store"] = recorder->to_json();
      if (recorder && !o->json) fmt::print("{}\n", recorder->summary());
      doc.push_back(entry);
    }
    // A backend without a winner fails the command, even when another backend has one.
    code = winners.empty() || winners.size() < doc.size() ? kExitFailedGate : exit_code(winners);
    if (o->json) { fmt::print("{}\n", doc.dump(2)); return; }
    const std::string peer = problem->baseline_name().empty() ? "baseline" : problem->baseline_name();
    fmt::print("{:<7} {:<22} {:<44} {:>10} {:>9} {:>6} {:>10}\n", "backend", "sizes", "best parameters",
               "time ms", "GFLOP/s", "SOL%", "vs " + peer);
    for (const auto& w : winners)  // "-" where the problem has no baseline to time
      fmt::print("{:<7} {:<22} {:<44} {:>10.3f} {:>9.1f} {:>6.1f} {:>10}\n", w.backend, format_sizes(w.sizes),
                 format_params(w.params), w.timing ? w.timing->median_s * 1e3 : 0.0, w.gflops,
                 w.roofline ? 100 * w.roofline->sol_fraction : 0.0,
                 w.baseline ? fmt::format("{:.2f}x", w.speedup()) : "-");
    for (const auto& e : doc)
      if (!e.contains("best")) fmt::print("{:<7} no configuration passed\n", e["backend"].get<std::string>());
    if (o->extra.objective != "time") print_energy(winners, o->extra.objective);
  });
}

}  // namespace kforge::cli
