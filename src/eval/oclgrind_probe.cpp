// The Oclgrind race worker (oclgrind_probe.hpp): which sizes it runs, how it is started, and how
// Oclgrind's reports become a verdict.
#include "eval/oclgrind_probe.hpp"

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/problem_file.hpp"
#include "kforge/subprocess.hpp"

namespace kforge {

std::string oclgrind_runtime() {
  if (const char* e = std::getenv("KFORGE_OCLGRIND_RUNTIME"); e && *e) return e;
  for (const char* p : {"/usr/lib/oclgrind/liboclgrind-rt.so", "/usr/lib/x86_64-linux-gnu/oclgrind/liboclgrind-rt.so",
                        "/usr/local/lib/oclgrind/liboclgrind-rt.so", "/usr/local/lib/liboclgrind-rt.so"})
    if (std::filesystem::exists(p)) return p;
  return {};
}

Sizes oclgrind_sizes(const EvalRequest& req, const Problem& p, double work_cap) {
  const ParamValues params = req.kernel.resolve(req.params);
  const auto accepted = [&](const Sizes& s) {
    try {
      p.check_sizes(s);
    } catch (const UsageError&) {
      return false;
    }
    return !req.kernel.check(params, s);
  };
  // Halving keeps a size's factors of two (a tile multiple stays one while it is above the tile).
  Sizes s = req.sizes, best = req.sizes;
  while (true) {
    if (accepted(s)) {
      best = s;
      if (p.fuzz_work(s) <= work_cap) return s;
    }
    auto largest = s.end();
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it->second > 1 && (largest == s.end() || it->second > largest->second)) largest = it;
    if (largest == s.end()) return best;  // all ones: the smallest accepted shape seen
    largest->second = (largest->second + 1) / 2;
  }
}

namespace {

// One access as Oclgrind names it: the work-item, the operation and the source line.
struct ClAccess {
  std::string entity;  // "Global(1,0,0) Local(1,0,0) Group(0,0,0)"
  std::string op;      // "load", "store", "call" (an atomic), ...
  std::string where;   // "tiled_no_load_barrier.cl:26"
};

// One error report: "Read-write data race at local memory address 0x...", "Invalid read of
// size 4 at global memory address 0x...", "Work-group divergence detected (barrier)".
struct Report {
  std::string headline;
  std::string kind;  // "race", "oob_read", "guard"
  std::vector<ClAccess> accesses;
};

std::vector<Report> oclgrind_reports(const std::string& err) {
  static const std::regex race_re(R"(^((?:Read-write|Write-write) data race) at (\w+) memory)");
  static const std::regex oob_re(R"(^Invalid (read|write) of size (\d+) at (\w+) memory)");
  static const std::regex divergence_re(R"(^(Work-(?:group|item) divergence detected.*?):?$)");
  static const std::regex entity_re(R"(^\s+(?:First entity|Second entity|Entity):\s+(.*\S)\s*$)");
  static const std::regex op_re(R"(^\s+(?:%\S+ = )?(?:tail )?(\w+))");
  static const std::regex line_re(R"(^\s+At line (\d+) \(column \d+\) of (.*):\s*$)");
  std::vector<Report> out;
  std::istringstream in(err);
  std::string line;
  std::smatch m;
  bool want_op = false;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, race_re)) {
      out.push_back({fmt::format("{} in {} memory", m[1].str(), m[2].str()), "race", {}});
    } else if (std::regex_search(line, m, oob_re)) {
      out.push_back({fmt::format("invalid {} of size {} in {} memory", m[1].str(), m[2].str(), m[3].str()),
                     m[1].str() == "read" ? "oob_read" : "guard", {}});
    } else if (std::regex_search(line, m, divergence_re)) {
      out.push_back({m[1].str(), "race", {}});
    } else if (out.empty()) {
      continue;
    } else if (std::regex_search(line, m, entity_re)) {
      out.back().accesses.push_back({m[1].str(), "", ""});
      want_op = true;
    } else if (want_op && !out.back().accesses.empty() && std::regex_search(line, m, op_re)) {
      out.back().accesses.back().op = m[1].str();
      want_op = false;
    } else if (!out.back().accesses.empty() && std::regex_search(line, m, line_re)) {
      out.back().accesses.back().where =
          std::filesystem::path(m[2].str()).filename().string() + ":" + m[1].str();
    }
  }
  return out;
}

std::string format_sizes(const Sizes& s) {
  std::string out;
  for (const auto& [name, v] : s) out += (out.empty() ? "" : ",") + name + "=" + std::to_string(v);
  return out;
}

std::string group_of(const std::string& entity) {
  const auto at = entity.find("Group(");
  return at == std::string::npos ? "" : entity.substr(at);
}

std::string describe(const ClAccess& a) {
  return fmt::format("{} at {} by work-item {}", a.op.empty() ? "an access" : a.op,
                     a.where.empty() ? "an unknown line" : a.where, a.entity);
}

std::string detail_of(const Report& r, std::size_t same_kind) {
  std::string d = "Oclgrind: " + r.headline;
  if (r.accesses.size() >= 2) {
    const bool same_group = group_of(r.accesses[0].entity) == group_of(r.accesses[1].entity);
    d += fmt::format(" between two {}: {} and {}", same_group ? "work-items of one work-group" : "work-groups",
                     describe(r.accesses[0]), describe(r.accesses[1]));
  } else if (r.accesses.size() == 1) {
    d += ": " + describe(r.accesses[0]);
  }
  if (same_kind >= 100) d += " (100 or more such reports: Oclgrind stops at 100)";
  else if (same_kind > 1) d += fmt::format(" ({} such reports in all)", same_kind);
  return d;
}

void add_check(EvalResult& r, const std::string& name, bool passed, const std::string& detail) {
  if (r.verify) r.verify->checks.push_back({name, passed, detail});
}

// The first report of each kind becomes a failed check; the first failure of all decides the
// verdict (a verdict that had already failed keeps its failure and lists these beside it).
void apply_reports(const std::vector<Report>& reports, const Sizes& sizes, EvalResult& r) {
  for (const std::string kind : {"race", "oob_read", "guard"}) {
    std::size_t n = 0;
    const Report* first = nullptr;
    for (const Report& rep : reports)
      if (rep.kind == kind && n++ == 0) first = &rep;
    if (!first) {
      if (kind == "race")
        add_check(r, kind, true, "Oclgrind saw no data race or barrier divergence (its run at " + format_sizes(sizes) + ")");
      continue;
    }
    std::string detail = detail_of(*first, n);
    detail += " (Oclgrind's run at " + format_sizes(sizes) + ")";
    add_check(r, kind, false, detail);
    if (!r.passed() || !r.verify) continue;
    r.disposition = kind == "race" ? Disposition::nondeterministic : Disposition::incorrect;
    r.verify->passed = false;
    r.verify->failed_check = r.verify->element_check = kind;
    r.verify->failure = kind + ": " + detail;
    r.verify->failed_sizes = sizes;
    r.error = r.verify->failure;
  }
}

}  // namespace

void probe_oclgrind(const EvalRequest& sent, const IsolationLimits& limits, const std::string& worker,
                    EvalResult& r) {
  const std::string runtime = oclgrind_runtime();
  if (runtime.empty()) {
    add_check(r, "race", true,
              "Oclgrind skipped: not installed (Debian: oclgrind; tools/install-deps) or set KFORGE_OCLGRIND_RUNTIME "
              "to its liboclgrind-rt.so");
    return;
  }
  if (!std::filesystem::exists(runtime)) {
    add_check(r, "race", true, "Oclgrind skipped: its runtime " + runtime + " (KFORGE_OCLGRIND_RUNTIME) is no file");
    return;
  }
  EvalRequest req = sent;
  try {
    const auto problem = req.problem_file.empty() ? find_problem(req.problem) : load_problem_file(req.problem_file);
    req.sizes = oclgrind_sizes(req, *problem);
  } catch (const std::exception& e) {
    add_check(r, "race", true, std::string("Oclgrind skipped: ") + e.what());
    return;
  }
  // The races are what this run is for: one quick trial at the small sizes, no other check.
  req.verify.thorough = false;
  req.verify.trials = 1;
  req.verify.index_width = false;
  req.verify.tsan = false;
  req.bench = false;
  req.baseline = false;
  req.backend_options.device_index = 0;  // the preloaded runtime is the only platform
  // Oclgrind's runtime in place of the ICD loader's entry points, as its `oclgrind` command does;
  // at most 100 reports (the first of each kind is what the verdict names).
  std::vector<std::string> argv = {"env", "LD_PRELOAD=" + runtime, "OCLGRIND_DATA_RACES=1",
                                   "OCLGRIND_MAX_ERRORS=100", worker};
  if (!limits.sandbox) argv.emplace_back("--no-sandbox");
  const ProcessResult p = run_process(argv, req.to_json().dump(),
                                      {.timeout_s = limits.timeout_s, .memory_bytes = limits.memory_bytes});
  const std::vector<Report> reports = oclgrind_reports(p.err);
  if (!reports.empty()) return apply_reports(reports, req.sizes, r);
  if (!p.ok()) return add_check(r, "race", true, "Oclgrind skipped: its worker ended with " + p.describe());
  if (p.out.find("Oclgrind") == std::string::npos)  // the device it ran on, in the result
    return add_check(r, "race", true, "Oclgrind skipped: its worker did not run on Oclgrind's device");
  add_check(r, "race", true,
            "Oclgrind saw no data race, barrier divergence or out-of-bounds access (its run at " +
                format_sizes(req.sizes) + ")");
}

}  // namespace kforge
