// `kforge tune`: search a library kernel's space on each backend named, then time the winner
// against the problem's baseline and print one table.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"
#include "kforge/tune.hpp"

namespace kforge::cli {

void add_tune(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("tune", "search a kernel's parameter space for the fastest correct configuration");
  struct Opts : InstanceOptions { std::string strategy = "random"; int budget = 20; std::uint64_t tune_seed = 1; };
  auto o = std::make_shared<Opts>();
  o->add_to(*cmd);
  o->trials = 1;
  cmd->add_option("--strategy", o->strategy, "random or brute")->capture_default_str();
  cmd->add_option("--budget", o->budget, "evaluations per backend (the default configuration included)")->capture_default_str();
  cmd->add_option("--tune-seed", o->tune_seed, "seed of the strategy")->capture_default_str();
  cmd->callback([o, &code] {
    const auto problem = find_problem(o->problem);
    nlohmann::json doc = nlohmann::json::array();
    std::vector<EvalResult> winners;
    for (const auto& name : backend_list(o->backends)) {
      auto backend = make_backend(name, {.threads = o->threads});
      EvalRequest base = make_request(*o, *problem, library_kernel(*problem, backend->lang()), name);
      const TuneResult t = tune(base, *backend, {o->strategy, o->budget, o->tune_seed},
                                [&](int done, int total, const EvalResult&) { progress("tune " + name, done, total); });
      nlohmann::json entry = {{"backend", name}, {"device", backend->device()}, {"evaluations", nlohmann::json::array()}};
      for (const auto& e : t.evaluations) entry["evaluations"].push_back(e.to_json());
      if (t.best >= 0) {
        // Re-time the winner beside the baseline, in one go.
        EvalRequest req = base;
        req.params = t.evaluations[t.best].params;
        req.bench = true;
        req.baseline = true;
        winners.push_back(evaluate(req, *backend));
        entry["best"] = winners.back().to_json();
      }
      doc.push_back(entry);
    }
    code = winners.empty() ? kExitFailedGate : exit_code(winners);
    if (o->json) { fmt::print("{}\n", doc.dump(2)); return; }
    fmt::print("{:<7} {:<22} {:<44} {:>10} {:>9} {:>6} {:>10}\n", "backend", "sizes", "best parameters",
               "time ms", "GFLOP/s", "SOL%", "vs " + problem->baseline_name());
    for (const auto& w : winners)
      fmt::print("{:<7} {:<22} {:<44} {:>10.3f} {:>9.1f} {:>6.1f} {:>9.2f}x\n", w.backend, format_sizes(w.sizes),
                 format_params(w.params), w.timing ? w.timing->median_s * 1e3 : 0.0, w.gflops,
                 w.roofline ? 100 * w.roofline->sol_fraction : 0.0, w.speedup());
    for (const auto& e : doc)
      if (!e.contains("best")) fmt::print("{:<7} no configuration passed\n", e["backend"].get<std::string>());
  });
}

}  // namespace kforge::cli
