// evaluate and bench: a kernel through the gates in a kforge-worker subprocess, as `kforge eval`
// and `kforge bench` run it, with the agent loop's feedback (src/agent/feedback.hpp).
#include <fmt/format.h>

#include "agent/feedback.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"
#include "mcp/tool_common.hpp"

namespace kforge::mcp {
namespace {

std::string extension(Lang l) {
  return l == Lang::cpp ? ".cpp" : l == Lang::opencl ? ".cl" : ".cu";
}

// 'ceil_div(N,64),ceil_div(M,64)' is two expressions: commas inside parentheses do not split.
json expressions(const json& v) {
  if (v.is_array()) return v;
  json out = json::array({""});
  int depth = 0;
  for (char ch : v.get<std::string>()) {
    if (ch == ',' && depth == 0) {
      out.push_back("");
      continue;
    }
    depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
    out.back() = out.back().get<std::string>() + ch;
  }
  return out;
}

// The candidate's kernel spec: `spec` (params, constraints, ...) with the call's own fields on top.
KernelSpec candidate_spec(const json& a, const Problem& p, const std::string& source) {
  json j = a.value("spec", json::object());
  j["problem"] = p.name();
  if (!j.contains("name")) j["name"] = "candidate";
  if (a.contains("lang")) j["lang"] = a["lang"];
  if (!j.contains("lang")) j["lang"] = "cpp";
  if (a.contains("entry")) j["entry"] = a["entry"];
  if (a.contains("grid")) j["grid"] = expressions(a["grid"]);
  if (a.contains("block")) j["block"] = expressions(a["block"]);
  if (!j.contains("dtypes")) {
    j["dtypes"] = json::array();
    for (DType d : p.dtypes()) j["dtypes"].push_back(dtype_name(d));
  }
  KernelSpec k = KernelSpec::from_json_with_source(j, source);
  // Parameters the call sets but the spec does not declare: a space of one value each.
  const json params_json = a.value("params", json::object());
  for (const auto& [name, v] : params_json.items()) {
    bool declared = false;
    for (const auto& prm : k.params) declared = declared || prm.name == name;
    if (!declared) {
      k.params.push_back({name, {v.get<std::int64_t>()}});
      k.defaults[name] = v.get<std::int64_t>();
    }
  }
  return k;
}

std::string assignments(const auto& values) {
  std::string out;
  for (const auto& [k, v] : values) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

// The candidate kept on disk (the cache folder, by content hash), so that the replay line the
// feedback gives reproduces the verdict with `kforge eval`.
std::string replay_line(const json& a, const EvalRequest& req) {
  KernelSpec k = req.kernel;
  std::filesystem::path source = a.value("source_path", std::string());
  std::string spec_text;
  k.defaults = k.resolve(req.params);
  json sj = k.to_json();
  sj.erase("source");
  spec_text = sj.dump(2) + "\n";
  const std::string stem = "candidate-" + hex64(hash64(k.source + spec_text));
  const auto dir = cache_dir("mcp");
  if (source.empty()) {
    source = dir / (stem + extension(k.lang));
    write_file_atomic(source, k.source);
  }
  const auto spec = dir / (stem + ".json");
  write_file_atomic(spec, spec_text);
  std::string line = fmt::format(
      "kforge eval --problem {} --source {} --spec {} --backend {} --size {} --dtype {} --seed "
      "{}{}",
      req.problem_file.empty() ? req.problem : req.problem_file, source.string(), spec.string(),
      req.backend, assignments(req.sizes), dtype_name(req.dtype), req.verify.seed,
      req.verify.thorough ? "" : " --quick");
  if (!req.scalars.empty()) line += " --scalar " + assignments(req.scalars);
  if (req.verify.tsan) line += " --tsan";
  return line + (req.bench ? " --bench" : "");
}

IsolationLimits limits_of(const json& a, const ServerOptions& o) {
  IsolationLimits l = o.limits;
  l.timeout_s = a.value("timeout_s", l.timeout_s);
  if (a.contains("memory_gib"))
    l.memory_bytes = static_cast<long long>(a["memory_gib"].get<double>() * (1ll << 30));
  return l;
}

ToolResult verdict(const EvalResult& r, const agent::FeedbackContext& ctx, json store) {
  const agent::Judged j = agent::judge(r, ctx);
  ToolResult out;
  out.structured = {{"disposition", j.disposition},
                    {"passed", r.passed()},
                    {"summary", j.summary},
                    {"feedback", j.feedback},
                    {"result", r.to_json()}};
  if (!store.is_null()) out.structured["store"] = store;
  json brief = {{"feedback", j.feedback}};
  if (!store.is_null()) brief["store"] = store;
  out.text =
      text_of(j.summary, brief) + "\n\n(structuredContent.result holds the full evaluation JSON)";
  return out;
}

ToolResult evaluate(const ToolCall& c) {
  const json& a = c.args;
  if (a.contains("source") == a.contains("source_path"))
    throw UsageError(
        "give the kernel as `source` (its text) or `source_path` (a file), exactly one of them");
  const auto p = problem_of(a, *c.options);
  const std::string source = a.contains("source") ? a["source"].get<std::string>()
                                                  : read_file(a["source_path"].get<std::string>());
  const KernelSpec k = candidate_spec(a, *p, source);
  EvalRequest req = request_of(a, *p, k, backend_of(a, k.lang));
  req.bench = a.value("bench", false);
  req.baseline = req.bench && !p->baseline_name().empty();
  apply_measure(a, req.measure);
  agent::FeedbackContext ctx;
  ctx.problem = p.get();
  ctx.task_sizes = req.sizes;
  ctx.counters = req.bench ? agent::hardware_counters() : "not measured (bench: false)";
  ctx.source_name = a.contains("source_path") ? a["source_path"].get<std::string>()
                                              : "candidate" + extension(k.lang);
  ctx.replay = replay_line(a, req);
  c.progress(0, 1, "evaluating in a kforge-worker");
  const EvalResult r = evaluate_isolated(req, limits_of(a, *c.options));
  return verdict(r, ctx, record(*c.options, "kforge mcp (evaluate and bench calls)", req, r));
}

ToolResult bench(const ToolCall& c) {
  const json& a = c.args;
  const auto p = problem_of(a, *c.options);
  const std::string backend = a.value("backend", std::string("cpu"));
  const Sizes sizes = sizes_of(a, *p);
  KernelSpec k;
  if (a.contains("kernel")) {
    const std::string name = a["kernel"].get<std::string>();
    bool found = false;
    std::string names;
    for (const auto& lk : library_kernels(*p)) {
      names += (names.empty() ? "" : ", ") + lk.name;
      if (lk.name == name) {
        k = lk;
        found = true;
      }
    }
    if (!found)
      throw UsageError(
          fmt::format("problem {} has no kernel '{}' (its kernels: {})", p->name(), name, names));
  } else {
    k = library_kernel(*p, lang_of_backend(backend), sizes);
  }
  EvalRequest req = request_of(a, *p, k, a.contains("backend") ? backend : backend_of(a, k.lang));
  req.bench = true;
  req.baseline = a.value("baseline", true) && !p->baseline_name().empty();
  apply_measure(a, req.measure);
  agent::FeedbackContext ctx;
  ctx.problem = p.get();
  ctx.task_sizes = req.sizes;
  ctx.counters = agent::hardware_counters();
  ctx.source_name = k.source_path.empty() ? k.name : k.source_path;
  ctx.replay =
      fmt::format("kforge bench {} --backend {} --size {} --dtype {} --params '{}' --seed {}",
                  p->name(), req.backend, assignments(req.sizes), dtype_name(req.dtype),
                  assignments(k.resolve(req.params)), req.verify.seed);
  c.progress(0, 1, "verifying and timing in a kforge-worker");
  const EvalResult r = evaluate_isolated(req, c.options->limits);
  return verdict(r, ctx, record(*c.options, "kforge mcp (evaluate and bench calls)", req, r));
}

}  // namespace

Tool evaluate_tool() {
  json extra = {
      {"source", {{"type", "string"}, {"description", "the kernel's source text"}}},
      {"source_path", {{"type", "string"}, {"description", "or a file holding it"}}},
      {"lang",
       {{"type", "string"}, {"enum", {"cpp", "opencl", "cuda"}}, {"description", "default cpp"}}},
      {"entry",
       {{"type", "string"},
        {"description",
         "the kernel's function name (default: the problem's name, "
         "other characters than letters and digits made '_')"}}},
      {"grid",
       {{"type", {"string", "array"}},
        {"items", {{"type", "string"}}},
        {"description",
         "blocks per dimension: expressions over sizes and params, e.g. "
         "\"ceil_div(M,16)\" or [\"ceil_div(N,64)\", \"ceil_div(M,64)\"]"}}},
      {"block",
       {{"type", {"string", "array"}},
        {"items", {{"type", "string"}}},
        {"description", "threads per block, e.g. \"16,16\""}}},
      {"spec",
       {{"type", "object"},
        {"description",
         "a kernel spec (params, defaults, constraints, grid, block, "
         "dtypes; docs/commands/eval.md); the fields above override it"}}},
      {"bench",
       {{"type", "boolean"},
        {"description", "time it (and the problem's baseline) once it passes"}}},
      {"measure", measure_property()},
      {"timeout_s",
       {{"type", "number"},
        {"minimum", 1},
        {"description", "seconds before the worker is killed (default 120)"}}},
      {"memory_gib",
       {{"type", "number"},
        {"minimum", 0.25},
        {"description", "address space of the worker (default 8)"}}}};
  return {
      "evaluate",
      "Evaluate a kernel source",
      "Runs a kernel source through kforge's gates in an isolated worker, exactly as `kforge "
      "eval`: compile, "
      "verification against a high-precision reference (thorough unless quick: other "
      "distributions, "
      "determinism, perturbation, fuzzed shapes), and with bench the timing, baseline and "
      "speed-of-light "
      "fraction. Returns the disposition (passed, incorrect, compile_error, crashed, timeout, "
      "invalid_config, "
      "...), feedback an agent can act on (first compiler errors at the source's own lines; the "
      "failed check "
      "with the first bad element and a replay command; or time, speedup and SOL) and the full "
      "result JSON.",
      object_schema({"problem", "sizes", "dtype", "scalars", "params", "backend", "quick", "seed", "tsan"},
                    extra, {"problem"}),
      false,
      evaluate};
}

Tool bench_tool() {
  json extra = {
      {"kernel",
       {{"type", "string"},
        {"description",
         "a library kernel's name (describe_problem lists them); "
         "default: the backend's kernel for these sizes"}}},
      {"baseline",
       {{"type", "boolean"}, {"description", "also time the problem's baseline (default true)"}}},
      {"measure", measure_property()}};
  return {
      "bench",
      "Benchmark a library kernel",
      "Verifies, then times a library kernel of a problem, as `kforge bench`: median with spread, "
      "GFLOP/s, "
      "GB/s, speed-of-light fraction and the speedup over the problem's baseline (OpenBLAS for "
      "gemm).",
      object_schema({"problem", "sizes", "dtype", "scalars", "params", "backend", "quick", "seed", "tsan"},
                    extra, {"problem"}),
      false,
      bench};
}

}  // namespace kforge::mcp
