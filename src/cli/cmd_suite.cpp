// `kforge suite`: every problem of the library with its default sizes, on each backend named:
// correctness, time, speedup over the problem's baseline, speed-of-light fraction and score;
// then the suite figures fast_p (p = 1, 1.5, 2) and the geometric-mean SOL fraction. Output
// as a table, CSV, or JSON shaped like Google Benchmark's (a `context`, then `benchmarks`).
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/bench_store.hpp"
#include "cli/common.hpp"
#include "cli/measure_flags.hpp"
#include "kforge/backend.hpp"
#include "kforge/dist.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"
#include "kforge/problem_file.hpp"
#include "kforge/util.hpp"

namespace kforge::cli {
namespace {

struct SuiteOptions : InstanceOptions {
  std::string problems;  // comma-separated filter; empty: all
  std::string folder;    // --problems DIR: the problem files there instead of the library
  bool csv = false;
  MeasureFlags measure;
  BenchStoreOptions store;  // each problem runs its best stored configuration, if any
};

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&t));
  return buf;
}

// The assignments of `spec` (--size or --scalar) that name one of `names` (this problem's);
// the others belong to other problems.
template <class Values>
std::string assignments_for(const std::vector<std::string>& names, const Values& values) {
  std::string out;
  for (const auto& [k, v] : values)
    if (std::find(names.begin(), names.end(), k) != names.end())
      out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

nlohmann::json entry_json(const EvalResult& r, const ParamsSource& source) {
  nlohmann::json j = r.to_json();
  j.update(source.to_json());
  const std::string name = fmt::format("{}/{}/{}/{}", r.problem, r.backend, format_sizes(r.sizes),
                                       dtype_name(r.dtype));
  j["name"] = name;
  j["run_name"] = name;
  j["run_type"] = "iteration";
  j["correct"] = r.passed();
  if (r.timing) {
    j["iterations"] = r.timing->repetitions();
    j["real_time"] = r.timing->median_s * 1e3;
    j["time_unit"] = "ms";
  }
  return j;
}

nlohmann::json summary_json(const std::vector<EvalResult>& results) {
  // fast_p is over the entries whose problem has a baseline (a speedup needs one); the
  // geometric-mean SOL is over all of them.
  std::vector<SuiteEntry> entries, with_baseline, now;
  int correct = 0;
  for (const auto& r : results) {
    entries.push_back({r.passed(), r.speedup(), r.roofline ? r.roofline->sol_fraction : 0.0});
    if (r.baseline) with_baseline.push_back(entries.back());
    if (r.roofline_now) now.push_back({r.passed(), r.speedup(), r.roofline_now->sol_fraction});
    correct += r.passed() ? 1 : 0;
  }
  nlohmann::json j = {{"entries", results.size()},
          {"correct", correct},
          {"with_baseline", with_baseline.size()},
          {"fast_1.0", fast_p(with_baseline, 1.0)},
          {"fast_1.5", fast_p(with_baseline, 1.5)},
          {"fast_2.0", fast_p(with_baseline, 2.0)},
          {"geomean_sol_fraction", geomean_sol(entries)}};
  // --roof-now: the same against each entry's roof of the minute it ran in
  if (!now.empty()) j["geomean_sol_fraction_now"] = geomean_sol(now);
  return j;
}

std::string csv_field(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void print_csv(const std::vector<EvalResult>& results) {
  fmt::print("name,problem,kernel,backend,dtype,sizes,params,disposition,correct,median_ms,"
             "stdev_ms,repetitions,outliers,gflops,speedup,sol_fraction,sol_score,bound,"
             "arithmetic_intensity,sol_fraction_now\n");
  for (const auto& r : results) {
    const auto& t = r.timing;
    const auto& rf = r.roofline;
    fmt::print("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
               csv_field(fmt::format("{}/{}/{}/{}", r.problem, r.backend, format_sizes(r.sizes),
                                     dtype_name(r.dtype))),
               r.problem, r.kernel, r.backend, dtype_name(r.dtype), csv_field(format_sizes(r.sizes)),
               csv_field(format_params(r.params)), disposition_name(r.disposition), r.passed(),
               t ? t->median_s * 1e3 : 0.0, t ? t->stdev_s * 1e3 : 0.0, t ? t->repetitions() : 0,
               t ? t->outliers : 0, r.gflops, r.speedup(), rf ? rf->sol_fraction : 0.0,
               rf && rf->score ? fmt::format("{:.4f}", *rf->score) : "", rf ? rf->bound : "",
               rf ? rf->arithmetic_intensity : 0.0,
               r.roofline_now ? fmt::format("{:.4f}", r.roofline_now->sol_fraction) : "");
  }
}

void print_table(const std::vector<EvalResult>& results, const std::vector<ParamsSource>& sources,
                 const nlohmann::json& summary) {
  std::size_t wp = 7, wk = 6, ws = 5;  // column widths: the longest problem, kernel, sizes
  for (const auto& r : results) {
    wp = std::max(wp, r.problem.size());
    wk = std::max(wk, r.kernel.size());
    ws = std::max(ws, format_sizes(r.sizes).size());
  }
  const bool now = summary.contains("geomean_sol_fraction_now");  // a column for --roof-now
  fmt::print("{:<{}} {:<7} {:<{}} {:<{}} {:<7} {:<11} {:>10} {:>9} {:>7} {:>9} {:>6} {:>6}{}\n", "problem", wp,
             "backend", "kernel", wk, "sizes", ws, "params", "status", "time ms", "GFLOP/s", "GB/s", "speedup",
             "SOL%", "score", now ? "   now%" : "");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const EvalResult& r = results[i];
    const auto& rf = r.roofline;
    fmt::print("{:<{}} {:<7} {:<{}} {:<{}} {:<7} {:<11} {:>10.3f} {:>9.1f} {:>7.1f} {:>9} {:>6.1f} {:>6}{}\n",
               r.problem, wp, r.backend, r.kernel, wk, format_sizes(r.sizes), ws, sources[i].source,
               disposition_name(r.disposition), r.timing ? r.timing->median_s * 1e3 : 0.0, r.gflops,
               r.gbytes_s, r.baseline ? fmt::format("{:.2f}x", r.speedup()) : "-",
               rf ? 100 * rf->sol_fraction : 0.0, rf && rf->score ? fmt::format("{:.3f}", *rf->score) : "-",
               !now ? "" : r.roofline_now ? fmt::format(" {:>6.1f}", 100 * r.roofline_now->sol_fraction) : "      -");
  }
  fmt::print("\n{} entries, {} correct; of the {} with a baseline: fast_1.0 {:.2f}  fast_1.5 {:.2f}  "
             "fast_2.0 {:.2f}; geomean SOL {:.1f}%\n",
             summary["entries"].get<int>(), summary["correct"].get<int>(), summary["with_baseline"].get<int>(),
             summary["fast_1.0"].get<double>(), summary["fast_1.5"].get<double>(),
             summary["fast_2.0"].get<double>(), 100 * summary["geomean_sol_fraction"].get<double>());
  if (now)
    fmt::print("geomean SOL against the memory roofs measured next to each entry (--roof-now): {:.1f}%\n",
               100 * summary["geomean_sol_fraction_now"].get<double>());
}

}  // namespace

void add_suite(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand(
      "suite", "every problem with its default sizes and kernel: correctness, time, speedup over "
               "the baseline, speed of light; fast_p and geometric-mean SOL");
  auto o = std::make_shared<SuiteOptions>();
  o->backends = "all";
  o->add_to(*cmd, /*problem_positional=*/false);
  cmd->add_option("--problem", o->problems, "only these problems (comma-separated)");
  cmd->add_option("--problems", o->folder, "run the problem files in this folder (kernels beside them) instead of the library");
  cmd->add_flag("--csv", o->csv, "print CSV rows instead of a table");
  o->measure.add_to(*cmd);
  o->store.add_to(*cmd);
  cmd->callback([o, &code] {
    if (!o->params.empty()) throw UsageError("suite runs every problem: --params does not apply (tune, then the suite reads the store)");
    if (o->json && o->csv) throw UsageError("choose one of --json and --csv");
    const auto all = o->folder.empty() ? problems() : problems_in(o->folder);
    if (all.empty()) throw UsageError("no problem files in " + o->folder);
    const auto wanted = o->problems.empty() ? std::vector<std::string>{} : split(o->problems, ',');
    for (const auto& w : wanted)  // an unknown name: a usage error
      if (std::none_of(all.begin(), all.end(), [&](const auto& p) { return p->name() == w; })) (void)find_problem(w);
    std::vector<EvalResult> results;
    std::vector<ParamsSource> sources;
    nlohmann::json ceilings_json = nlohmann::json::array();
    const auto names = backend_list(o->backends);
    std::size_t total = 0, done = 0;
    for (const auto& p : all)
      if (wanted.empty() || std::find(wanted.begin(), wanted.end(), p->name()) != wanted.end())
        total += names.size();
    std::vector<EvalRequest> requests;  // one backend's, evaluated together
    std::vector<bool> isolate;
    for (const auto& name : names) {
      auto backend = make_backend(name, {.threads = o->threads});
      if (backend->can_run()) ceilings_json.push_back(ceilings(*backend).to_json());
      for (const auto& p : all) {
        if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), p->name()) == wanted.end())
          continue;
        const bool from_file = !p->source_file().empty();
        progress("suite", static_cast<int>(done), static_cast<int>(total));
        InstanceOptions io = *o;
        io.problem = p->name();
        io.sizes = assignments_for(p->size_names(), parse_assignments(o->sizes));
        io.scalars = assignments_for(p->scalar_names(), parse_real_assignments(o->scalars));
        const Sizes sizes = p->resolve_sizes(parse_assignments(io.sizes));  // picks the kernel
        const auto kernels = library_kernels(*p);
        if (std::none_of(kernels.begin(), kernels.end(), [&](const KernelSpec& k) {
              return k.lang == backend->lang() && (!from_file || k.applies_to(sizes)); })) {
          ++done;  // a problem file need not bring a kernel for every backend, nor a library
          continue;  // problem that has no kernel on this backend yet
        }
        EvalRequest req = make_request(io, *p, library_kernel(*p, backend->lang(), sizes), name);
        req.bench = true;
        req.baseline = true;
        o->measure.apply(req.measure);
        sources.push_back(o->store.choose(req, *backend, ""));
        requests.push_back(std::move(req));
        isolate.push_back(from_file);  // not kforge's own code: in a worker
      }
      // Under mpirun the problems are spread over the ranks (kforge/dist.hpp).
      const std::size_t before = done;
      auto got = dist::evaluate_all(requests, isolate, *backend, [&](int n) {
        progress("suite", static_cast<int>(before + static_cast<std::size_t>(n)), static_cast<int>(total));
      });
      done = before + got.size();
      for (auto& r : got) results.push_back(std::move(r));
      requests.clear();
      isolate.clear();
    }
    code = exit_code(results);
    const nlohmann::json summary = summary_json(results);
    if (o->csv) return print_csv(results);
    if (!o->json) return print_table(results, sources, summary);
    nlohmann::json context = machine_info().to_json();
    context["date"] = now_iso();
#ifdef NDEBUG
    context["library_build_type"] = "release";
#else
    context["library_build_type"] = "debug";
#endif
    context["measure"] = {{"cold", o->measure.cold},
                          {"roof_now", o->measure.roof_now},
                          {"criterion", o->measure.repetitions > 0
                                            ? fmt::format("fixed count of {}", o->measure.repetitions)
                                            : fmt::format("noise: rel stdev <= {} after >= {} s, timeout {} s",
                                                          o->measure.max_noise, o->measure.min_time_s,
                                                          o->measure.max_time_s)}};
    context["ceilings"] = ceilings_json;
    nlohmann::json doc = {{"context", context}, {"benchmarks", nlohmann::json::array()}, {"summary", summary}};
    for (std::size_t i = 0; i < results.size(); ++i) doc["benchmarks"].push_back(entry_json(results[i], sources[i]));
    fmt::print("{}\n", doc.dump(2));
  });
}

}  // namespace kforge::cli
