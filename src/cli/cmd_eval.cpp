// `kforge eval`: an outside kernel source through the same gates as a library kernel, in a
// worker subprocess with time and memory limits.
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge::cli {

namespace {
struct EvalOptions : InstanceOptions {
  std::string source, lang, spec, entry, grid, block;
  bool bench = false, tsan = false;
  double timeout_s = 120;
  double memory_gib = 8;
};

// Splits a list of expressions at the commas outside parentheses, so that
// 'ceil_div(N,64),ceil_div(M,64)' is two expressions, not four pieces.
std::vector<std::string> split_expressions(const std::string& text) {
  std::vector<std::string> out{std::string()};
  int depth = 0;
  for (char c : text) {
    if (c == ',' && depth == 0) { out.emplace_back(); continue; }
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    out.back() += c;
  }
  return out;
}

std::string backend_for(Lang l) {
  switch (l) {
    case Lang::cpp: return "cpu";
    case Lang::opencl: return "opencl";
    case Lang::cuda: return "cuda";
  }
  return "cpu";
}

KernelSpec candidate_spec(const EvalOptions& o, const Problem& p) {
  nlohmann::json j = nlohmann::json::object();
  if (!o.spec.empty()) {
    try {
      j = nlohmann::json::parse(read_file(o.spec));
    } catch (const nlohmann::json::exception& e) {
      throw UsageError("--spec " + o.spec + " is not valid JSON: " + e.what());
    }
  }
  j["problem"] = p.name();
  if (!j.contains("name")) j["name"] = "candidate";
  if (!o.lang.empty()) j["lang"] = o.lang;
  if (!j.contains("lang")) throw UsageError("say the source's language with --lang cpp|opencl|cuda");
  if (!o.entry.empty()) j["entry"] = o.entry;
  if (!o.grid.empty()) j["grid"] = split_expressions(o.grid);
  if (!o.block.empty()) j["block"] = split_expressions(o.block);
  if (!j.contains("dtypes")) {
    j["dtypes"] = nlohmann::json::array();
    for (DType d : p.dtypes()) j["dtypes"].push_back(dtype_name(d));
  }
  KernelSpec k = KernelSpec::from_json_with_source(j, read_file(o.source));
  k.source_path = o.source;
  // Parameters given on the command line but not declared in a spec become a one-value space.
  for (const auto& [name, v] : parse_assignments(o.params)) {
    bool declared = false;
    for (const auto& prm : k.params) declared = declared || prm.name == name;
    if (!declared) { k.params.push_back({name, {v}}); k.defaults[name] = v; }
  }
  return k;
}
}  // namespace

void add_eval(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("eval", "run an outside kernel source through kforge's gates (isolated)");
  auto o = std::make_shared<EvalOptions>();
  o->backends.clear();
  o->add_to(*cmd, false);
  cmd->add_option("--problem", o->problem, "the problem the source solves")->required();
  cmd->add_option("--source", o->source, "the kernel source file")->required();
  cmd->add_option("--lang", o->lang, "cpp, opencl or cuda");
  cmd->add_option("--spec", o->spec, "a kernel spec JSON (params, constraints, grid, block)");
  cmd->add_option("--entry", o->entry, "the kernel's function name (default: the problem's name)");
  cmd->add_option("--grid", o->grid, "blocks per dimension, expressions over sizes and params, e.g. 'ceil_div(N,64),ceil_div(M,64)'");
  cmd->add_option("--block", o->block, "threads per block, e.g. '16,16'");
  cmd->add_flag("--bench", o->bench, "time it after it passes");
  cmd->add_option("--timeout", o->timeout_s, "seconds before the worker is killed")->capture_default_str();
  cmd->add_option("--memory", o->memory_gib, "GiB of address space the worker may use")->capture_default_str();
  cmd->add_flag("--tsan,--race-worker", o->tsan, "after a thorough pass, the race worker runs the kernel once more: "
                "cpu built with ThreadSanitizer, each block on a thread of its own; opencl on Oclgrind's simulated "
                "device at a small instance; a data race is `nondeterministic`, check `race` (docs/verification.md)");
  auto no_sandbox = std::make_shared<bool>(false);
  cmd->add_flag("--no-sandbox", *no_sandbox,
                "run the kernel without the worker's seccomp sandbox (for debugging; "
                "KFORGE_NO_SANDBOX=1 does the same for every command)");
  cmd->callback([o, no_sandbox, &code] {
    const auto problem = find_problem(o->problem);
    const KernelSpec k = candidate_spec(*o, *problem);
    const std::string backend = o->backends.empty() ? backend_for(k.lang) : o->backends;
    EvalRequest req = make_request(*o, *problem, k, backend);
    req.verify.index_width = o->index_width != 0;  // an outside source: on unless --no-index-width
    req.bench = o->bench;
    req.baseline = o->bench;
    if (o->tsan && o->quick) throw UsageError("--tsan is a thorough check: drop --quick");
    if (o->tsan && backend != "cpu" && backend != "opencl")
      throw UsageError("--tsan (the race worker) sees cpu and opencl kernels only (this source runs on " + backend +
                       "): drop --tsan");
    req.verify.tsan = o->tsan;
    const auto r = evaluate_isolated(req, {.timeout_s = o->timeout_s,
                                           .memory_bytes = static_cast<long long>(o->memory_gib * (1ll << 30)),
                                           .sandbox = !*no_sandbox});
    print_results({r}, o->json, o->bench);
    code = exit_code({r});
  });
}

}  // namespace kforge::cli
