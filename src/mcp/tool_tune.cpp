// tune: search a library kernel's parameter space (kforge's tuner, every evaluation in a
// kforge-worker), one progress notification per evaluation, stopped at the next evaluation
// once the client cancels. Evaluations are recorded in the store as they end, and a tuning
// of the same instance resumes from them.
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/store.hpp"
#include "kforge/strategy.hpp"
#include "kforge/tune.hpp"
#include "mcp/tool_common.hpp"

namespace kforge::mcp {
namespace {

std::string assignments(const ParamValues& values) {
  std::string out;
  for (const auto& [k, v] : values) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out.empty() ? "-" : out;
}

// The store side of one tuning run: resume from stored results, record each new one.
struct Journal {
  std::optional<Store> store;
  std::string fingerprint, error;
  std::int64_t run = 0;
  int resumed = 0, recorded = 0;

  Journal(const ServerOptions& o, const std::string& command, const Backend& b, bool fresh,
          TuneOptions& to) {
    if (!o.record) return;
    try {
      store.emplace(o.db);
      fingerprint = machine_fingerprint(b.name(), b.device());
      run = store->begin_run(command, fingerprint);
    } catch (const std::exception& e) {
      error = std::string("not recorded: ") + e.what();
      store.reset();
      return;
    }
    if (!fresh)
      to.lookup = [this](const EvalRequest& req) -> std::optional<EvalResult> {
        const auto hit = store->find_reusable(req, fingerprint);
        if (!hit) return std::nullopt;
        ++resumed;
        return hit->to_result();
      };
    to.record = [this](const EvalRequest& req, const EvalResult& r) { add(req, r); };
  }
  void add(const EvalRequest& req, const EvalResult& r) {
    if (!store) return;
    store->record(run, StoredEvaluation::from(req, r, fingerprint));
    ++recorded;
  }
  [[nodiscard]] json to_json(const ServerOptions& o) const {
    if (!o.record) return nullptr;
    if (!store) return {{"path", o.db.string()}, {"error", error}};
    return {{"path", o.db.string()}, {"run", run}, {"resumed", resumed}, {"recorded", recorded}};
  }
};

json evaluation_brief(const EvalResult& e) {
  json j = {{"params", e.params}, {"disposition", disposition_name(e.disposition)}};
  if (e.timing) j["median_s"] = e.timing->median_s;
  if (e.roofline) j["sol_fraction"] = e.roofline->sol_fraction;
  if (!e.passed()) j["error"] = e.error;
  return j;
}

ToolResult tune_tool_run(const ToolCall& c) {
  const json& a = c.args;
  const auto p = problem_of(a, *c.options);
  const std::string backend_name = a.value("backend", std::string("cpu"));
  auto backend = open_backend(backend_name);
  if (!backend->can_run())
    throw UsageError("backend " + backend_name + " cannot run here: " + backend->device());
  const Sizes sizes = sizes_of(a, *p);
  const KernelSpec k = restrict_space(library_kernel(*p, backend->lang(), sizes),
                                      a.value("restrict", std::string()));
  json quick = a;
  quick["quick"] =
      !a.value("thorough", false);  // tuning verifies quickly; the winner thoroughly below
  EvalRequest base = request_of(quick, *p, k, backend_name);
  apply_measure(a, base.measure);

  TuneOptions to;
  to.strategy = a.value("strategy", std::string("bayes"));
  to.budget = a.value("budget", 20);
  to.seed = a.value("tune_seed", std::uint64_t{1});
  to.time_limit_s = a.value("time_limit_s", 0.0);
  to.isolate = true;  // a long-lived server keeps every kernel out of its own process
  to.stop = [&c] { return c.is_cancelled(); };
  Journal journal(*c.options,
                  fmt::format("kforge mcp tune {} --backend {} --size {} --strategy {} --budget {}",
                              p->name(), backend_name, assignments(sizes), to.strategy, to.budget),
                  *backend, a.value("fresh", false), to);

  double best_s = 0;
  const TuneResult t = tune(base, *backend, to, [&](int done, int total, const EvalResult& e) {
    if (e.passed() && e.timing && (best_s == 0 || e.timing->median_s < best_s))
      best_s = e.timing->median_s;
    c.progress(
        done, total,
        fmt::format("evaluation {}/{}: {} {}{}", done, total, assignments(e.params),
                    disposition_name(e.disposition),
                    best_s > 0 ? fmt::format(" (best {:.4g} ms)", best_s * 1e3) : std::string()));
  });

  ToolResult r;
  json evals = json::array();
  for (const auto& e : t.evaluations) evals.push_back(evaluation_brief(e));
  r.structured = {{"problem", p->name()},        {"kernel", k.name},     {"backend", backend_name},
                  {"device", backend->device()}, {"sizes", sizes},       {"strategy", to.strategy},
                  {"space_size", t.space_size},  {"stopped", t.stopped}, {"evaluations", evals}};
  if (!t.strategy_report.empty()) r.structured["strategy_report"] = t.strategy_report;
  std::string text =
      fmt::format("tuned {} on {}: {} evaluation(s) of {} valid configurations (stopped: {})",
                  k.name, backend_name, t.evaluations.size(), t.space_size, t.stopped);
  if (t.best >= 0 && !c.is_cancelled()) {
    // The winner re-verified thoroughly and re-timed beside the baseline, as `kforge tune` does.
    EvalRequest req = base;
    req.params = t.evaluations[t.best].params;
    req.verify.thorough = true;
    req.bench = true;
    req.baseline = !p->baseline_name().empty();
    c.progress(t.evaluations.size() + 0.5, t.evaluations.size() + 1,
               "re-verifying the winner thoroughly");
    const EvalResult w = evaluate_isolated(req, c.options->limits);
    journal.add(req, w);
    r.structured["best"] = w.to_json();
    text += fmt::format("\nbest {}: {}", assignments(w.params), disposition_name(w.disposition));
    if (w.timing)
      text += fmt::format(", {:.4g} ms, {:.1f} GFLOP/s", w.timing->median_s * 1e3, w.gflops);
    if (w.roofline)
      text += fmt::format(", {:.1f}% of the speed of light", 100 * w.roofline->sol_fraction);
    if (w.baseline) text += fmt::format(", {:.2f}x {}", w.speedup(), w.baseline_name);
  } else if (t.best < 0) {
    text += "\nno configuration passed";
  }
  if (const json s = journal.to_json(*c.options); !s.is_null()) r.structured["store"] = s;
  r.text = text_of(text, r.structured.contains("best")
                             ? json{{"best_params", r.structured["best"]["params"]},
                                    {"stopped", t.stopped},
                                    {"evaluations", evals.size()}}
                             : json{{"stopped", t.stopped}, {"evaluations", evals.size()}});
  return r;
}

}  // namespace

Tool tune_tool() {
  json extra = {
      {"strategy",
       {{"type", "string"},
        {"enum", strategy_names()},
        {"description", "search strategy (default bayes)"}}},
      {"budget",
       {{"type", "integer"},
        {"minimum", 1},
        {"maximum", 100000},
        {"description", "evaluations, the default configuration included (default 20)"}}},
      {"tune_seed",
       {{"type", "integer"}, {"minimum", 0}, {"description", "seed of the strategy (default 1)"}}},
      {"time_limit_s",
       {{"type", "number"},
        {"minimum", 0},
        {"description", "stop once this much evaluation time is spent"}}},
      {"restrict",
       {{"type", "string"}, {"description", "keep only these values, e.g. \"MR=4|6,NV=2\""}}},
      {"thorough",
       {{"type", "boolean"},
        {"description",
         "verify every configuration thoroughly (default: quickly; "
         "the winner is always re-verified thoroughly)"}}},
      {"fresh",
       {{"type", "boolean"},
        {"description",
         "measure every configuration again instead of resuming "
         "from the store's results"}}},
      {"measure", measure_property()}};
  return {"tune",
          "Tune a library kernel",
          "Searches a library kernel's parameter space for the fastest correct configuration "
          "(kforge's tuner, "
          "each evaluation in an isolated worker, recorded in the results store), then re-verifies "
          "the winner "
          "thoroughly and times it beside the baseline. Long-running: send _meta.progressToken to "
          "get one "
          "notifications/progress per evaluation; notifications/cancelled stops it at the next "
          "evaluation.",
          object_schema({"problem", "sizes", "dtype", "scalars", "backend", "seed"}, extra,
                        {"problem"}),
          false,
          tune_tool_run};
}

}  // namespace kforge::mcp
