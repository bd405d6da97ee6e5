// `kforge db`: the results store. list (runs), show ID (one run and its evaluations),
// export --format json|csv|kerneltuner, import FILE (Kernel Tuner cache files), scores (fast_p
// over agent runs).
#include <fmt/format.h>

#include <fstream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/store_options.hpp"
#include "kforge/agent.hpp"
#include "kforge/error.hpp"
#include "kforge/store.hpp"

namespace kforge::cli {
namespace {

std::string ms(const std::optional<double>& s) { return s ? fmt::format("{:.4g}", *s * 1e3) : "-"; }

std::string params_text(const StoredEvaluation& e) {
  std::string out;
  const nlohmann::json params = e.params();
  for (const auto& [k, v] : params.items())
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v.is_string() ? v.get<std::string>() : v.dump());
  return out.empty() ? "-" : out;
}

std::string shorten(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

// A `kforge agent` run's journal: one line per attempt, in the order the proposer sent them.
void print_agent_attempts(const std::vector<AgentAttempt>& attempts) {
  if (attempts.empty()) return;
  fmt::print("agent attempts:\n{:>7} {:<16} {:<15} {:>7} {:>8} {:>10} {:>6}  {}\n", "attempt", "disposition", "gate",
             "score", "speedup", "median ms", "SOL%", "note");
  for (const auto& a : attempts)
    fmt::print("{:>7} {:<16} {:<15} {:>7.1f} {:>8} {:>10} {:>6}  {}\n", a.attempt, a.disposition,
               a.feedback.value("gate", "-"), a.score, a.speedup ? fmt::format("{:.2f}x", *a.speedup) : "-",
               ms(a.median_s), a.sol_fraction ? fmt::format("{:.1f}", 100 * *a.sol_fraction) : "-",
               shorten(a.note, 60));
}

void add_db_list(CLI::App& db) {
  auto* cmd = db.add_subcommand("list", "the runs in the database, with their evaluation counts");
  struct Opts { std::string db; bool json = false; };
  auto o = std::make_shared<Opts>();
  add_db_option(*cmd, o->db);
  cmd->add_flag("--json", o->json, "print one JSON document instead of a table");
  cmd->callback([o] {
    const auto store = open_store_if_exists(store_path(o->db));
    const auto runs = store ? store->runs() : std::vector<RunInfo>{};
    if (o->json) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& r : runs) a.push_back(r.to_json());
      fmt::print("{}\n", a.dump(2));
      return;
    }
    if (!store) {
      fmt::print("no results database at {} yet (kforge tune --db writes one)\n", store_path(o->db).string());
      return;
    }
    fmt::print("{:>4} {:<24} {:>6} {:>6} {:>10}  {:<40} {}\n", "run", "started (UTC)", "evals", "passed",
               "best ms", "machine", "command");
    for (const auto& r : runs)
      fmt::print("{:>4} {:<24} {:>6} {:>6} {:>10}  {:<40} {}\n", r.id, r.started, r.evaluations, r.passed,
                 ms(r.best_median_s), shorten(r.fingerprint, 40), r.command);
  });
}

void add_db_show(CLI::App& db) {
  auto* cmd = db.add_subcommand("show", "one run and every evaluation it recorded");
  struct Opts { std::string db; std::int64_t id = 0; bool json = false; };
  auto o = std::make_shared<Opts>();
  cmd->add_option("id", o->id, "run id (see `kforge db list`)")->required();
  add_db_option(*cmd, o->db);
  cmd->add_flag("--json", o->json, "print one JSON document instead of a table");
  cmd->callback([o] {
    const Store store(store_path(o->db), Store::Mode::read_only);
    const auto run = store.run(o->id);
    if (!run) throw UsageError(fmt::format("no run {} in {}: see `kforge db list`", o->id, store.path().string()));
    StoreQuery q;
    q.run_id = o->id;
    const auto es = store.evaluations(q);
    if (o->json) {
      nlohmann::json j = run->to_json();
      j["evaluation_list"] = nlohmann::json::array();
      for (const auto& e : es) j["evaluation_list"].push_back(e.to_json());
      if (const auto attempts = store.agent_attempts(o->id); !attempts.empty()) {
        j["agent_attempts"] = nlohmann::json::array();
        for (const auto& a : attempts) j["agent_attempts"].push_back(a.to_json());
      }
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("run {}  started {}  kforge {}\n  {}\n  machine: {}\n", run->id, run->started,
               run->kforge_version, run->command, run->fingerprint);
    fmt::print("{:>6} {:<15} {:<22} {:<44} {:>10} {:>9} {:>6}\n", "eval", "disposition", "sizes",
               "parameters", "median ms", "GFLOP/s", "SOL%");
    for (const auto& e : es)
      fmt::print("{:>6} {:<15} {:<22} {:<44} {:>10} {:>9} {:>6}\n", e.id, e.disposition,
                 shorten(e.key.sizes, 22), shorten(params_text(e), 44), ms(e.median_s),
                 e.gflops ? fmt::format("{:.1f}", *e.gflops) : "-",
                 e.sol_fraction ? fmt::format("{:.1f}", 100 * *e.sol_fraction) : "-");
    print_agent_attempts(store.agent_attempts(o->id));
  });
}

void add_db_export(CLI::App& db) {
  auto* cmd = db.add_subcommand("export", "stored evaluations as JSON, CSV or a Kernel Tuner cache file");
  struct Opts { std::string db, format = "json", output, problem, backend, kernel, fingerprint; std::int64_t run = 0; };
  auto o = std::make_shared<Opts>();
  add_db_option(*cmd, o->db);
  cmd->add_option("--format,-f", o->format, "json, csv or kerneltuner")
      ->check(CLI::IsMember({"json", "csv", "kerneltuner"}))->capture_default_str();
  cmd->add_option("--output,-o", o->output, "write to this file instead of standard output");
  cmd->add_option("--run", o->run, "only this run's evaluations");
  cmd->add_option("--problem", o->problem, "only this problem's evaluations");
  cmd->add_option("--backend,-b", o->backend, "only this backend's evaluations");
  cmd->add_option("--kernel", o->kernel, "only this kernel's evaluations");
  cmd->add_option("--machine", o->fingerprint, "only evaluations of this machine fingerprint");
  cmd->callback([o] {
    const Store store(store_path(o->db), Store::Mode::read_only);
    StoreQuery q;
    q.problem = o->problem;
    q.backend = o->backend;
    q.fingerprint = o->fingerprint;
    q.kernel = o->kernel;
    if (o->run > 0) q.run_id = o->run;
    const auto es = store.evaluations(q);
    const std::string text = o->format == "csv"           ? export_csv(es)
                             : o->format == "kerneltuner" ? export_kerneltuner(store, es)
                                                          : export_json(es);
    if (o->output.empty()) {
      fmt::print("{}", text);
      return;
    }
    std::ofstream out(o->output, std::ios::binary);
    out << text;
    if (!out) throw UsageError("cannot write '" + o->output + "': check the path");
    fmt::print(stderr, "kforge: wrote {} evaluation(s) to {}\n", es.size(), o->output);
  });
}

void add_db_import(CLI::App& db) {
  auto* cmd = db.add_subcommand("import", "Kernel Tuner cache files into the database, one run each");
  struct Opts { std::string db; std::vector<std::string> files; bool json = false; };
  auto o = std::make_shared<Opts>();
  cmd->add_option("files", o->files, "Kernel Tuner cache files (JSON)")->required();
  add_db_option(*cmd, o->db);
  cmd->add_flag("--json", o->json, "print one JSON document instead of a table");
  cmd->callback([o] {
    Store store(store_path(o->db));
    nlohmann::json a = nlohmann::json::array();
    for (const auto& f : o->files) {
      const auto r = import_kerneltuner(store, f, command_line());
      a.push_back({{"file", f}, {"run", r.run_id}, {"entries", r.entries}, {"failed", r.failed},
                   {"kernel", r.kernel}, {"device", r.device}});
      if (!o->json)
        fmt::print("imported {}: run {}, {} configurations ({} failed) of {} on {}\n", f, r.run_id,
                   r.entries, r.failed, r.kernel, r.device);
    }
    if (o->json) fmt::print("{}\n", a.dump(2));
  });
}

// fast_p and the other published agent scores over the store's agent runs (agent_scores()).
void add_db_scores(CLI::App& db) {
  auto* cmd = db.add_subcommand("scores", "fast_p, geometric means and arena scores over `kforge agent` runs");
  struct Opts { std::string db; std::vector<std::int64_t> runs; bool json = false; };
  auto o = std::make_shared<Opts>();
  cmd->add_option("runs", o->runs, "run ids (default: every agent run; each problem instance counts once, by "
                                   "its latest run)");
  add_db_option(*cmd, o->db);
  cmd->add_flag("--json", o->json, "print one JSON document instead of a table");
  cmd->callback([o] {
    const Store store(store_path(o->db), Store::Mode::read_only);
    const AgentScores s = agent_scores(store, o->runs);
    if (o->json) {
      fmt::print("{}\n", s.to_json().dump(2));
      return;
    }
    if (s.runs.empty()) {
      fmt::print("no `kforge agent` runs in {}\n", store.path().string());
      return;
    }
    fmt::print("{:>4} {:<22} {:<26} {:<7} {:>8} {:>8} {:>8} {:>6} {:>7}\n", "run", "problem", "sizes", "backend",
               "attempts", "correct", "speedup", "SOL%", "arena");
    for (const auto& r : s.runs)
      fmt::print("{:>4} {:<22} {:<26} {:<7} {:>8} {:>8} {:>8} {:>6} {:>7.1f}\n", r.run_id, shorten(r.problem, 22),
                 shorten(r.sizes, 26), r.backend, r.attempts, r.correct ? "yes" : "no",
                 r.speedup ? fmt::format("{:.2f}x", *r.speedup) : "-",
                 r.sol_fraction ? fmt::format("{:.1f}", 100 * *r.sol_fraction) : "-", r.arena);
    std::string fp;
    for (const auto& [p, v] : s.fast_p) fp += fmt::format("  fast_{:g} {:.2f}", p, v);
    fmt::print("over {} problem instance(s), by each run's final check:{}\n  geometric mean speedup {:.2f}x, "
               "SOL {:.1f}% (correct ones); mean arena score {:.1f}\n",
               s.runs.size(), fp, s.geomean_speedup, 100 * s.geomean_sol, s.mean_arena);
  });
}

}  // namespace

void add_db(CLI::App& app, int& code) {
  auto* db = app.add_subcommand("db", "the results store: list, show, export and import evaluations; agent scores");
  db->require_subcommand(1);
  add_db_list(*db);
  add_db_show(*db);
  add_db_export(*db);
  add_db_import(*db);
  add_db_scores(*db);
  (void)code;  // errors throw; the subcommands exit 0 otherwise
}

}  // namespace kforge::cli
