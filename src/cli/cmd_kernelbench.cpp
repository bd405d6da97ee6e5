// `kforge kernelbench LEVEL_DIR --solutions DIR`: a KernelBench level under both verdicts. Per
// problem file: KernelBench's own check (its inputs, its tolerance), kforge's verdict (the full
// protocol, isolated), the kernel's time, torch eager's time on KernelBench's inputs, the
// speedup, then fast_p under each verdict. Solutions are C++ sources for the cpu backend named
// after the problem file (19_ReLU.py: 19_ReLU.cpp, entry kb_19_ReLU), with an optional kernel
// spec beside them (19_ReLU.json: grid, block, params).
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/error.hpp"
#include "kforge/kernelbench.hpp"
#include "kforge/util.hpp"
#include "problem/kernelbench_problem.hpp"

namespace kforge::cli {
namespace {

namespace fs = std::filesystem;

struct KbOptions {
  std::string level, solutions, sizes;
  std::int64_t max_size = 0;
  double atol = 1e-2, rtol = 1e-2;
  int kb_trials = 5, kb_seed = 42, eager_runs = 20, threads = 0;
  double timeout_s = 300;
  bool quick = false, json = false;
};

// The number in front of a KernelBench file name (19_ReLU.py: 19), for the level's order.
long leading_number(const fs::path& p) {
  const std::string s = p.stem().string();
  std::size_t n = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
  return n ? std::stol(s.substr(0, n)) : 1L << 30;
}

KernelSpec solution_spec(const Problem& p, const fs::path& source) {
  nlohmann::json j = nlohmann::json::object();
  const fs::path spec = fs::path(source).replace_extension(".json");
  if (fs::exists(spec)) {
    try {
      j = nlohmann::json::parse(read_file(spec));
    } catch (const nlohmann::json::exception& e) {
      throw UsageError("kernel spec " + spec.string() + " is not valid JSON: " + e.what());
    }
  }
  j["problem"] = p.name();
  if (!j.contains("name")) j["name"] = source.stem().string();
  j["lang"] = "cpp";
  if (!j.contains("entry")) j["entry"] = default_entry(p.name());
  if (!j.contains("dtypes")) j["dtypes"] = {"fp32"};
  KernelSpec k = KernelSpec::from_json_with_source(j, read_file(source));
  k.source_path = source.string();
  return k;
}

// The sizes a problem runs at: its defaults with --max-size and --size applied; where those do
// not fit this machine, the sizes the problem suggests (said in `note`).
Sizes sizes_for(const KernelBenchProblem& p, const KbOptions& o, std::string& note) {
  Sizes over;
  for (const auto& [k, v] : p.default_sizes())
    if (o.max_size > 0 && v > o.max_size) over[k] = o.max_size;
  const auto names = p.size_names();
  for (const auto& [k, v] : parse_assignments(o.sizes))
    if (std::find(names.begin(), names.end(), k) != names.end()) over[k] = v;
  Sizes s = p.default_sizes();
  for (const auto& [k, v] : over) s[k] = v;
  if (p.memory_needed(s) > KernelBenchProblem::memory_budget()) {
    auto fit = p.fitting_sizes(s);
    if (!fit) return p.resolve_sizes(over);  // throws, saying why
    note = "sizes rebound to fit this machine's memory budget";
    s = *fit;
  }
  p.check_sizes(s);
  return s;
}

struct Row {
  std::string file, problem, sizes, note;
  std::string kb = "-", kforge = "-", kforge_check;
  double kb_max_diff = 0, time_s = 0, kb_time_s = 0, eager_s = 0;
  bool has_solution = false;
  // torch eager's median over the kernel's: kforge's timing of it, or KernelBench's own (which
  // exists for a kernel kforge rejected too).
  [[nodiscard]] double speedup() const { return time_s > 0 && eager_s > 0 ? eager_s / time_s : 0; }
  [[nodiscard]] double kb_speedup() const { return kb_time_s > 0 && eager_s > 0 ? eager_s / kb_time_s : 0; }
  [[nodiscard]] nlohmann::json to_json() const {
    return {{"file", file}, {"problem", problem}, {"sizes", sizes}, {"note", note},
            {"solution", has_solution}, {"kernelbench_verdict", kb}, {"kernelbench_max_abs_diff", kb_max_diff},
            {"kforge_verdict", kforge}, {"kforge_failed_check", kforge_check}, {"time_s", time_s},
            {"kernelbench_time_s", kb_time_s}, {"torch_eager_s", eager_s}, {"speedup", speedup()},
            {"kernelbench_speedup", kb_speedup()}};
  }
};

Row run_one(const fs::path& file, const KbOptions& o) {
  Row row;
  row.file = file.filename().string();
  std::shared_ptr<Problem> found;
  try {
    found = find_problem(file.string());
  } catch (const UsageError& e) {
    row.kb = row.kforge = "problem_error";
    row.note = e.what();
    return row;
  }
  const auto* p = dynamic_cast<const KernelBenchProblem*>(found.get());
  row.problem = found->name();
  Sizes sizes;
  try {
    sizes = sizes_for(*p, o, row.note);
  } catch (const UsageError& e) {
    row.kb = row.kforge = "problem_error";
    row.note = e.what();
    return row;
  }
  row.sizes = format_sizes(sizes);
  const fs::path source = fs::path(o.solutions) / (file.stem().string() + ".cpp");
  row.has_solution = fs::exists(source);
  try {
    row.eager_s = p->eager_time(sizes, o.eager_runs, o.threads).first;
    if (!row.has_solution) return row;
    const KernelSpec k = solution_spec(*found, source);
    const KbCheckResult kb = kernelbench_check(*found, k, "cpu", p->kernelbench_trials(sizes, o.kb_trials, o.kb_seed),
                                               o.atol, o.rtol, o.timeout_s);
    row.kb = kb.status;
    row.kb_max_diff = kb.max_abs_diff;
    row.kb_time_s = kb.time_s;
    EvalRequest req;
    req.problem = found->name();
    req.problem_file = found->source_file();
    req.kernel = k;
    req.sizes = sizes;
    req.backend = "cpu";
    req.backend_options.threads = o.threads;
    req.verify.thorough = !o.quick;
    req.bench = true;
    const EvalResult r = evaluate_isolated(req, {.timeout_s = o.timeout_s});
    row.kforge = std::string(disposition_name(r.disposition));
    if (r.verify && !r.verify->failed_check.empty()) row.kforge_check = r.verify->failed_check;
    if (r.timing) row.time_s = r.timing->median_s;
    if (!r.passed() && row.note.empty()) row.note = r.error.substr(0, 300);
  } catch (const UsageError& e) {
    row.kforge = row.kforge == "-" ? "problem_error" : row.kforge;
    row.note = e.what();
  }
  return row;
}

// fast_p: the share of the level's problems that are correct and faster than torch eager by
// more than p (KernelBench's definition; p = 0 is the share correct). Under KernelBench's
// verdict the speedup is its own timing's (trial 0's inputs), under kforge's kforge's.
double fast_p(const std::vector<Row>& rows, bool kforge_verdict, double p) {
  if (rows.empty()) return 0;
  double n = 0;
  for (const auto& r : rows) {
    const bool correct = kforge_verdict ? r.kforge == "passed" : r.kb == "passed";
    if (correct && (p == 0 ? true : (kforge_verdict ? r.speedup() : r.kb_speedup()) > p)) ++n;
  }
  return n / static_cast<double>(rows.size());
}

}  // namespace

void add_kernelbench(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("kernelbench", "a KernelBench level: KernelBench's verdict and kforge's, side by side");
  auto o = std::make_shared<KbOptions>();
  cmd->add_option("level", o->level, "a folder of KernelBench problem files (e.g. KernelBench/level1)")->required();
  cmd->add_option("--solutions", o->solutions, "a folder of C++ solutions named after the problem files (19_ReLU.cpp)")
      ->required();
  cmd->add_option("--size", o->sizes, "size constants to rebind, NAME=V,... (each applies to the problems that have it)");
  cmd->add_option("--max-size", o->max_size, "rebind every size constant above this value to it");
  cmd->add_option("--atol", o->atol, "KernelBench's absolute tolerance")->capture_default_str();
  cmd->add_option("--rtol", o->rtol, "KernelBench's relative tolerance")->capture_default_str();
  cmd->add_option("--kb-trials", o->kb_trials, "KernelBench's correctness trials")->capture_default_str();
  cmd->add_option("--kb-seed", o->kb_seed, "KernelBench's seed")->capture_default_str();
  cmd->add_option("--eager-runs", o->eager_runs, "timed runs of torch eager")->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads for the kernel and for torch (0: all cores)");
  cmd->add_option("--timeout", o->timeout_s, "seconds each evaluation may take")->capture_default_str();
  cmd->add_flag("--quick", o->quick, "kforge's quick protocol (no determinism, perturbation or shape fuzzing)");
  cmd->add_flag("--json", o->json, "print one JSON document");
  cmd->callback([o, &code] {
    if (!fs::is_directory(o->level)) throw UsageError("no folder " + o->level);
    if (!fs::is_directory(o->solutions)) throw UsageError("no folder " + o->solutions + " (--solutions)");
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(o->level))
      if (e.is_regular_file() && is_kernelbench_file(e.path().string())) files.push_back(e.path());
    std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
      return std::pair(leading_number(a), a.filename()) < std::pair(leading_number(b), b.filename());
    });
    if (files.empty()) throw UsageError("no KernelBench problem files (.py with get_inputs) in " + o->level);
    std::vector<Row> rows;
    for (std::size_t i = 0; i < files.size(); ++i) {
      progress("kernelbench " + files[i].filename().string(), static_cast<int>(i), static_cast<int>(files.size()));
      rows.push_back(run_one(files[i], *o));
    }
    progress("", static_cast<int>(files.size()), static_cast<int>(files.size()));
    const std::vector<double> ps{0, 1, 2};
    nlohmann::json doc = {{"level", o->level}, {"solutions", o->solutions}, {"problems", nlohmann::json::array()},
                          {"kernelbench_tolerance", {{"atol", o->atol}, {"rtol", o->rtol}}}};
    for (const auto& r : rows) doc["problems"].push_back(r.to_json());
    for (double p : ps) {
      doc["fast_p"]["kernelbench"][fmt::format("fast_{:g}", p)] = fast_p(rows, false, p);
      doc["fast_p"]["kforge"][fmt::format("fast_{:g}", p)] = fast_p(rows, true, p);
    }
    bool any_problem_error = false, any_rejected = false;
    for (const auto& r : rows) {
      any_problem_error = any_problem_error || r.kforge == "problem_error";
      any_rejected = any_rejected || (r.has_solution && r.kforge != "passed" && r.kforge != "problem_error");
    }
    code = any_problem_error ? kExitUsage : any_rejected ? kExitFailedGate : kExitPassed;
    if (o->json) { fmt::print("{}\n", doc.dump(2)); return; }
    fmt::print("{:<34} {:<14} {:<22} {:>11} {:>11} {:>11} {:>8}  {}\n", "problem", "kernelbench", "kforge", "kb time",
               "time", "eager", "speedup", "sizes / note");
    for (const auto& r : rows) {
      const std::string kf = r.kforge + (r.kforge_check.empty() ? "" : " (" + r.kforge_check + ")");
      fmt::print("{:<34} {:<14} {:<22} {:>11} {:>11} {:>11} {:>8}  {}{}\n", r.file.substr(0, 34), r.kb, kf,
                 r.kb_time_s > 0 ? fmt::format("{:.3g} s", r.kb_time_s) : "-",
                 r.time_s > 0 ? fmt::format("{:.3g} s", r.time_s) : "-",
                 r.eager_s > 0 ? fmt::format("{:.3g} s", r.eager_s) : "-",
                 r.speedup() > 0 ? fmt::format("{:.2f}x", r.speedup()) : "-", r.sizes,
                 r.note.empty() ? "" : "  " + r.note.substr(0, r.note.find('\n')));
    }
    fmt::print("fast_p over {} problem(s):", rows.size());
    for (double p : ps)
      fmt::print("  fast_{:g} kernelbench {:.2f} / kforge {:.2f}", p, fast_p(rows, false, p), fast_p(rows, true, p));
    fmt::print("\n(fast_0: correct; speedup: torch eager's median over the kernel's on this CPU, timed by kforge "
               "(time) or as KernelBench times it (kb time) for KernelBench's fast_p)\n");
  });
}

}  // namespace kforge::cli
