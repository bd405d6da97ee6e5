#include "mcp/tool_common.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "kforge/error.hpp"
#include "kforge/problem_file.hpp"
#include "kforge/store.hpp"

namespace kforge::mcp {

json instance_property(const std::string& name) {
  if (name == "problem")
    return {
        {"type", "string"},
        {"description", "a library problem's name (list_problems), or the path of a problem file"}};
  if (name == "sizes")
    return {
        {"type", "object"},
        {"description",
         "sizes by name, e.g. {\"M\": 64, \"N\": 64, \"K\": 64}; unnamed ones keep their defaults"},
        {"additionalProperties", {{"type", "integer"}, {"minimum", 0}}}};
  if (name == "dtype")
    return {{"type", "string"},
            {"enum", {"fp64", "fp32", "fp16", "bf16", "int8", "int32"}},
            {"description", "element type (the problem lists those it has); default fp32"}};
  if (name == "scalars")
    return {{"type", "object"},
            {"description",
             "scalar values to fix, e.g. {\"alpha\": 1.5}; the others vary per verification trial"},
            {"additionalProperties", {{"type", "number"}}}};
  if (name == "params")
    return {{"type", "object"},
            {"description", "kernel parameters (each reaches the source as #define NAME value)"},
            {"additionalProperties", {{"type", "integer"}}}};
  if (name == "backend")
    return {{"type", "string"},
            {"enum", {"cpu", "opencl", "cuda"}},
            {"description", "where it runs; default: the one of the kernel's language (cpp: cpu)"}};
  if (name == "quick")
    return {{"type", "boolean"},
            {"description",
             "quick verification (trials at the given sizes only) instead of the thorough "
             "protocol (also other distributions, determinism, perturbation, fuzzed shapes)"}};
  if (name == "seed")
    return {{"type", "integer"}, {"minimum", 0}, {"description", "seed of the input generator"}};
  if (name == "tsan")
    return {{"type", "boolean"},
            {"description",
             "cpu and opencl, thorough: after a pass, the race worker runs the kernel once more (cpu: built "
             "with ThreadSanitizer, each block on a thread of its own; opencl: on Oclgrind's simulated device); "
             "a data race fails it (nondeterministic, check race)"}};
  throw std::logic_error("no instance property " + name);
}

json object_schema(const std::vector<std::string>& instance, json extra,
                   const std::vector<std::string>& required) {
  json props = json::object();
  for (const auto& n : instance) props[n] = instance_property(n);
  for (auto& [k, v] : extra.items()) props[k] = v;
  return {{"type", "object"},
          {"properties", props},
          {"required", required},
          {"additionalProperties", false}};
}

json measure_property() {
  return {{"type", "object"},
          {"description",
           "how long to time: sampling runs at least min_time_s (default 0.5) and at most "
           "max_time_s (default 5), or exactly `repetitions` samples; cold rotates inputs"},
          {"properties",
           {{"min_time_s", {{"type", "number"}, {"minimum", 0}}},
            {"max_time_s", {{"type", "number"}, {"minimum", 0}}},
            {"repetitions", {{"type", "integer"}, {"minimum", 1}}},
            {"cold", {{"type", "boolean"}}}}},
          {"additionalProperties", false}};
}

void apply_measure(const json& args, MeasureOptions& m) {
  if (!args.contains("measure")) return;
  const json& j = args["measure"];
  m.min_time_s = j.value("min_time_s", m.min_time_s);
  m.max_time_s = j.value("max_time_s", m.max_time_s);
  m.repetitions = j.value("repetitions", m.repetitions);
  m.cold = j.value("cold", m.cold);
  if (m.max_time_s < m.min_time_s)
    throw UsageError(fmt::format("measure.max_time_s ({}) is below measure.min_time_s ({})",
                                 m.max_time_s, m.min_time_s));
}

std::shared_ptr<Problem> problem_of(const json& args, const ServerOptions& o) {
  const std::string name = args.at("problem").get<std::string>();
  try {
    return find_problem(name);
  } catch (const ProblemError&) {
    throw;  // a problem file that is broken: its own message says how
  } catch (const UsageError& e) {
    for (const auto& dir : o.problem_dirs)  // the server's --problems folders
      for (const auto& p : problems_in(dir))
        if (p->name() == name) return p;
    throw UsageError(std::string(e.what()) +
                     " (list_problems names every problem this server knows)");
  }
}

Sizes sizes_of(const json& args, const Problem& p) {
  Sizes overrides;
  const json sizes_json = args.value("sizes", json::object());
  for (const auto& [k, v] : sizes_json.items()) overrides[k] = v.get<std::int64_t>();
  return p.resolve_sizes(overrides);
}

Lang lang_of_backend(const std::string& backend) {
  if (backend == "cpu") return Lang::cpp;
  if (backend == "opencl") return Lang::opencl;
  if (backend == "cuda") return Lang::cuda;
  throw UsageError("unknown backend '" + backend + "' (cpu, opencl or cuda)");
}

namespace {
std::recursive_mutex& in_process_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}
}  // namespace

std::unique_ptr<Backend> open_backend(const std::string& name) {
  std::lock_guard lock(in_process_mutex());
  return make_backend(name);
}

std::unique_lock<std::recursive_mutex> in_process_measurement() {
  return std::unique_lock(in_process_mutex());
}

std::string backend_of(const json& args, Lang lang) {
  if (args.contains("backend")) return args["backend"].get<std::string>();
  switch (lang) {
    case Lang::opencl:
      return "opencl";
    case Lang::cuda:
      return "cuda";
    case Lang::cpp:
      break;
  }
  return "cpu";
}

EvalRequest request_of(const json& args, const Problem& p, const KernelSpec& kernel,
                       const std::string& backend) {
  if (lang_of_backend(backend) != kernel.lang)
    throw UsageError(fmt::format("backend {} runs {} sources, and the kernel is {}", backend,
                                 lang_name(lang_of_backend(backend)), lang_name(kernel.lang)));
  EvalRequest r;
  r.problem = p.name();
  r.problem_file = p.source_file();
  r.kernel = kernel;
  r.sizes = sizes_of(args, p);
  Scalars fixed;
  const json scalars_json = args.value("scalars", json::object());
  for (const auto& [k, v] : scalars_json.items()) fixed[k] = v.get<double>();
  r.scalars = p.resolve_scalars(fixed);
  r.dtype = parse_dtype(args.value("dtype", std::string("fp32")));
  bool offered = false;
  for (DType d : kernel.dtypes) offered = offered || d == r.dtype;
  if (!offered)
    throw UsageError(fmt::format("kernel {} has no {} variant (see describe_problem)", kernel.name,
                                 dtype_name(r.dtype)));
  const json params_json = args.value("params", json::object());
  for (const auto& [k, v] : params_json.items()) r.params[k] = v.get<std::int64_t>();
  (void)kernel.resolve(r.params);  // a parameter the kernel lacks: the tool's error, now
  r.backend = backend;
  r.verify.thorough = !args.value("quick", false);
  if (args.contains("seed")) r.verify.seed = args["seed"].get<std::uint64_t>();
  r.verify.tsan = args.value("tsan", false);
  if (r.verify.tsan && !r.verify.thorough) throw UsageError("tsan is a thorough check: drop quick");
  if (r.verify.tsan && backend != "cpu" && backend != "opencl")
    throw UsageError("tsan (the race worker) sees cpu and opencl kernels only (this runs on " + backend + "): drop tsan");
  return r;
}

json record(const ServerOptions& o, const std::string& command, const EvalRequest& req,
            const EvalResult& r) {
  if (!o.record) return nullptr;
  // One run per server process and machine for these single evaluations, so that the runs
  // table does not fill with one-evaluation runs; tune calls get a run each.
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::int64_t>
      runs;  // (db, fingerprint) -> run
  try {
    Store store(o.db);
    const std::string fingerprint =
        machine_fingerprint(r.backend.empty() ? req.backend : r.backend, r.device);
    std::int64_t run = 0;
    {
      std::lock_guard lock(mutex);
      auto& id = runs[{o.db.string(), fingerprint}];
      if (id == 0) id = store.begin_run(command, fingerprint);
      run = id;
    }
    const std::int64_t id = store.record(run, StoredEvaluation::from(req, r, fingerprint));
    return {{"path", o.db.string()}, {"run", run}, {"evaluation", id}};
  } catch (const std::exception& e) {
    return {{"path", o.db.string()}, {"error", std::string("not recorded: ") + e.what()}};
  }
}

std::string text_of(const std::string& summary, const json& structured) {
  return summary + "\n\n" + structured.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace kforge::mcp
