// The ThreadSanitizer run (tsan_probe.hpp): what the race worker is asked, how it is started,
// and how its reports become a verdict.
#include "eval/tsan_probe.hpp"

#include "eval/oclgrind_probe.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "kforge/resident_watch.hpp"
#include "kforge/util.hpp"

#ifndef KFORGE_TSAN_RUNTIME
#define KFORGE_TSAN_RUNTIME ""
#endif

namespace kforge {
namespace {

// One access of a report: "Read of size 8 at 0x... by thread T2:" and its first frame in the
// kernel's shared object.
struct Access {
  std::string kind;  // "Read of size 8", "Previous write of size 4", "Atomic write of size 4"
  std::string module, offset;  // "3f2a....so", "0x121f"; empty when no frame is in a kernel
};

struct Race {
  Access first, second;
};

// With symbolize=0 (the sandboxed worker can neither open files nor start a symbolizer), frames
// read "#1 <null> <null> (NAME.so+0x121f)"; a kernel is a content-hashed .so in the cpu cache.
std::vector<Race> data_races(const std::string& err) {
  static const std::regex access_re(R"(^  ((?:Previous )?(?:[Aa]tomic )?(?:[Rr]ead|[Ww]rite) of size \d+) at )");
  static const std::regex frame_re(R"(^\s+#\d+ .*\(([0-9a-f]{16}\.so)\+(0x[0-9a-f]+)\))");
  std::vector<Race> races;
  std::istringstream in(err);
  std::string line;
  bool inside = false;
  std::vector<Access> accesses;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find("WARNING: ThreadSanitizer: data race") != std::string::npos) {
      inside = true;
      accesses.clear();
      continue;
    }
    if (!inside) continue;
    if (line.rfind("SUMMARY: ThreadSanitizer", 0) == 0 || line.rfind("==================", 0) == 0) {
      inside = false;
      if (accesses.size() >= 2 && (!accesses[0].module.empty() || !accesses[1].module.empty()))
        races.push_back({accesses[0], accesses[1]});
      continue;
    }
    if (std::regex_search(line, m, access_re)) {
      accesses.push_back({m[1].str(), "", ""});
    } else if (!accesses.empty() && accesses.back().module.empty() && std::regex_search(line, m, frame_re)) {
      accesses.back().module = m[1].str();
      accesses.back().offset = m[2].str();
    }
  }
  return races;
}

// "in body at race_split_k.cpp:21": where `a` happened in the kernel's source, by addr2line
// (binutils, beside the compiler) on the cached shared object.
std::string kernel_line(const Access& a, const std::string& source_name) {
  if (a.module.empty()) return "outside the kernel's code";
  const auto so = cache_dir("cpu") / a.module;
  const ProcessResult p = run_process({"addr2line", "-f", "-C", "-i", "-e", so.string(), a.offset}, {}, {.timeout_s = 30});
  if (!p.ok()) return "in the kernel at " + a.module + "+" + a.offset;
  std::istringstream in(p.out);
  // Innermost first: the first frame in the candidate's own file is the line that made the
  // access (inlined library code such as std::copy comes before it, KF_KERNEL's wrapper after).
  std::string function, place, first;
  const std::string cached_source = a.module.substr(0, a.module.size() - 3) + ".cpp";
  while (std::getline(in, function) && std::getline(in, place)) {
    place = place.substr(0, place.find(' '));  // drop " (discriminator 3)"
    const auto file = std::filesystem::path(place.substr(0, place.rfind(':'))).filename().string();
    // The copy in the cache, or the kernel's own name where a `#line` put it back (a kernel
    // whose headers kforge expands names its file that way).
    const bool own = file == cached_source || file == source_name;
    const std::string here = fmt::format("in {} at {}:{}", function.substr(0, function.find('(')),
                                         own ? source_name : file, place.substr(place.rfind(':') + 1));
    if (own) return here;
    if (first.empty()) first = here;
  }
  return first.empty() ? "in the kernel at " + a.module + "+" + a.offset : first;
}

std::string lowercase_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

void add_check(EvalResult& r, bool passed, const std::string& detail) {
  if (!r.verify) return;
  r.verify->checks.push_back({"race", passed, detail});
}

}  // namespace

std::string tsan_runtime() {
  if (const char* e = std::getenv("KFORGE_TSAN_RUNTIME"); e && *e) return e;
  return KFORGE_TSAN_RUNTIME;
}

namespace {

// The race worker's request and the `env` arguments that preload the runtime, or why not.
struct TsanRun {
  std::string skipped;
  std::vector<std::string> env;
  EvalRequest req;
};

TsanRun tsan_run_of(const EvalRequest& req) {
  TsanRun t;
  const std::string runtime = tsan_runtime();
  if (req.backend != "cpu") t.skipped = "no race worker for " + req.backend + " kernels (cpu: ThreadSanitizer, opencl: Oclgrind)";
  else if (runtime.empty() || !std::filesystem::exists(runtime))
    t.skipped = "no ThreadSanitizer runtime (libtsan) was found for the compiler: install it (Debian: libtsan2) "
                "or set KFORGE_TSAN_RUNTIME";
  if (!t.skipped.empty()) return t;
  // exitcode=0: a report is read from stderr, not from the exit code. symbolize=0: see data_races.
  t.env = {"env", "LD_PRELOAD=" + runtime, "TSAN_OPTIONS=exitcode=0 symbolize=0 report_signal_unsafe=0"};
  // The races are what this run is for: trial 0's inputs once more (a quick verification of one
  // trial), at the requested sizes, without the checks the ordinary worker already made.
  t.req = req;
  t.req.verify.thorough = false;
  t.req.verify.trials = 1;
  t.req.verify.index_width = false;
  t.req.verify.tsan = false;
  t.req.bench = false;
  t.req.baseline = false;
  t.req.backend_options.tsan = true;
  return t;
}

void note_skipped(const std::string& why, EvalResult& r) { add_check(r, true, "ThreadSanitizer skipped: " + why); }

// `what`: how the race worker ended, in words (describe()).
void apply_tsan_run(const ProcessResult& p, const std::string& what, const EvalRequest& req, EvalResult& r) {
  const std::vector<Race> races = data_races(p.err);
  if (races.empty()) {
    if (p.ok()) add_check(r, true, "ThreadSanitizer saw no data race in the kernel's code (each block on a thread of its own)");
    else note_skipped("its worker " + what, r);
    return;
  }
  const std::string source = req.kernel.source_path.empty()
                                 ? "the kernel's source"
                                 : std::filesystem::path(req.kernel.source_path).filename().string();
  const Race& race = races.front();
  const std::string detail = fmt::format(
      "ThreadSanitizer: data race between two blocks: {} {} and {} {}{}", lowercase_first(race.first.kind),
      kernel_line(race.first, source), lowercase_first(race.second.kind), kernel_line(race.second, source),
      races.size() > 1 ? fmt::format(" ({} race reports in all)", races.size()) : "");
  add_check(r, false, detail);
  if (!r.passed() || !r.verify) return;  // the first failure stands; the race is listed beside it
  r.disposition = Disposition::nondeterministic;
  r.verify->passed = false;
  r.verify->failed_check = r.verify->element_check = "race";
  r.verify->failure = "race: " + detail;
  r.verify->failed_sizes = r.sizes;
  r.error = r.verify->failure;
}

}  // namespace

void probe_races(const EvalRequest& sent, const IsolationLimits& limits, const std::string& worker,
                 EvalResult& r) {
  // OpenCL's race worker is Oclgrind's simulated device (oclgrind_probe.hpp).
  if (sent.backend == "opencl") return probe_oclgrind(sent, limits, worker, r);
  const TsanRun t = tsan_run_of(sent);
  if (!t.skipped.empty()) return note_skipped(t.skipped, r);
  std::vector<std::string> argv = t.env;
  argv.push_back(worker);
  if (!limits.sandbox) argv.emplace_back("--no-sandbox");
  // No address-space limit (ThreadSanitizer reserves terabytes for its shadow, of which only
  // what the kernel touches becomes resident), but the ordinary worker's figure as a limit on
  // resident memory, watched from here, so a kernel that allocates without bound is still
  // stopped. The shadow of what the kernel touches counts too (about twice as much again): a
  // kernel near its limit may not fit under ThreadSanitizer, and the check then says so.
  ResidentWatch resident{.limit_bytes = limits.memory_bytes > 0 ? limits.memory_bytes : 0};
  const ProcessResult p = run_process(argv, t.req.to_json().dump(), {.timeout_s = limits.timeout_s}, resident);
  apply_tsan_run(p, describe(p, resident), sent, r);
}

}  // namespace kforge
