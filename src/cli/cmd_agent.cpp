// `kforge agent`: an outside optimizer drives the evaluate loop over JSON lines (docs/agent.md).
// Exit codes: 0 the best candidate passed its final check, 1 none passed, 2 bad usage or a
// proposer that broke the protocol (what ran before it is journaled; the same command resumes).
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/measure_flags.hpp"
#include "cli/store_options.hpp"
#include "kforge/agent.hpp"
#include "kforge/dist.hpp"
#include "kforge/error.hpp"

namespace kforge::cli {
namespace {

struct AgentCliOptions {
  std::string problem, proposer, backend = "cpu", sizes, scalars, dtype = "fp32", db, out = "kforge-agent";
  int budget = 10, parallel = 1, threads = 0;
  std::uint64_t seed = 0x6b666f726765ull;
  double timeout_s = 120, memory_gib = 8, proposer_timeout_s = 300;
  bool json = false, no_index_width = false, tsan = false;
  MeasureFlags measure;
};

void print_summary(const AgentSummary& s) {
  fmt::print("run {}{}: {} attempt(s), {} evaluated, {} from the journal; {}\n", s.run_id,
             s.resumed ? " (resumed)" : "", s.attempts, s.evaluated, s.from_journal, s.stop_reason);
  if (!s.best) {
    fmt::print("no candidate passed\n");
    return;
  }
  fmt::print("best: attempt {} ({}), score {:.1f}\n", s.best->attempt, s.best->note.empty() ? "no note" : s.best->note,
             s.best->score);
  fmt::print("final check{}: {}\n", s.final_from_journal ? " (from the journal)" : "",
             s.final_check.value("summary", ""));
  fmt::print("written to {}\n", s.best_file.string());
}

}  // namespace

void add_agent(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("agent", "an outside optimizer (any command) proposes kernels; kforge judges them");
  auto o = std::make_shared<AgentCliOptions>();
  cmd->add_option("--problem", o->problem, "the problem to solve (see `kforge list`)")->required();
  cmd->add_option("--proposer", o->proposer, "the proposer's command line, run with /bin/sh -c; it talks "
                  "JSON lines on its stdin/stdout (docs/agent.md)")->required();
  cmd->add_option("--budget", o->budget, "attempts in all (journaled ones count)")->capture_default_str();
  cmd->add_option("--parallel", o->parallel, "candidates per batch, evaluated at once (under mpirun: "
                  "one per rank at a time, each rank taking the next as it finishes)")->capture_default_str();
  cmd->add_option("--backend,-b", o->backend, "cpu, opencl or cuda")->capture_default_str();
  cmd->add_option("--size,-s", o->sizes, "sizes, e.g. M=256,N=256,K=256");
  cmd->add_option("--scalar", o->scalars, "scalar values the trials keep fixed");
  cmd->add_option("--dtype", o->dtype, "fp32, fp16 or bf16")->capture_default_str();
  cmd->add_option("--threads", o->threads, "cpu backend threads (0: all cores)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "names the run (with the problem, sizes and proposer) and seeds the "
                  "hidden verification")->capture_default_str();
  cmd->add_option("--out", o->out, "folder for every attempt's source and spec, and best.<ext>")->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "seconds before a worker is killed")->capture_default_str();
  cmd->add_option("--memory", o->memory_gib, "GiB of address space a worker may use")->capture_default_str();
  cmd->add_option("--proposer-timeout", o->proposer_timeout_s, "seconds the proposer may take for one line")
      ->capture_default_str();
  cmd->add_flag("--no-index-width", o->no_index_width,
                "verify candidates without the index_width check (one input past 2^31 elements; "
                "it costs seconds a candidate)");
  cmd->add_flag("--tsan,--race-worker", o->tsan,
                "cpu and opencl: every candidate's thorough verification (and the final check) also goes to the "
                "race worker (cpu: ThreadSanitizer, each block on a thread of its own; opencl: Oclgrind); a data "
                "race is `nondeterministic`, check `race`");
  add_db_option(*cmd, o->db);
  o->measure.add_to(*cmd);
  cmd->add_flag("--json", o->json, "print the summary as one JSON document");
  cmd->callback([o, &code] {
    if (o->tsan && o->backend != "cpu" && o->backend != "opencl")
      throw UsageError("--tsan (the race worker) sees cpu and opencl kernels only (--backend " + o->backend +
                       "): drop --tsan");
    const auto problem = find_problem(o->problem);
    AgentOptions a;
    a.problem = o->problem;
    a.proposer = o->proposer;
    a.budget = o->budget;
    a.parallel = o->parallel;
    a.backend = o->backend;
    a.sizes = problem->resolve_sizes(parse_assignments(o->sizes));
    a.scalars = problem->resolve_scalars(parse_real_assignments(o->scalars));
    a.dtype = parse_dtype(o->dtype);
    a.threads = o->threads;
    a.seed = o->seed;
    o->measure.apply(a.measure);
    a.limits = {.timeout_s = o->timeout_s, .memory_bytes = static_cast<long long>(o->memory_gib * (1ll << 30))};
    a.proposer_timeout_s = o->proposer_timeout_s;
    a.index_width = !o->no_index_width;
    a.tsan = o->tsan;
    a.out_dir = std::filesystem::absolute(o->out);  // the replay lines work from anywhere
    a.command = command_line();
    a.log = [](const std::string& line) { fmt::print(stderr, "kforge agent: {}\n", line); };
    // Under mpirun rank 0 (this process) speaks to the proposer and writes the store; each
    // batch's candidates are evaluated one per rank at a time, rank 0 included.
    const dist::Session* world = dist::current();
    const int ranks = world && world->launched() ? world->size() : 1;
    if (world && world->launched()) a.evaluate_batch = dist::evaluate_isolated_each;
    Store store(store_path(o->db));
    const AgentSummary s = run_agent(a, store);
    if (o->json) {
      nlohmann::json j = s.to_json();
      j["ranks"] = ranks;
      fmt::print("{}\n", j.dump(2));
    }
    else print_summary(s);
    code = s.best && s.final_passed ? kExitPassed : kExitFailedGate;
  });
}

}  // namespace kforge::cli
