// `kforge features`: what a performance model sees of a problem instance and a configuration,
// without running anything: the problem's sizes and counts, every parameter and derived ones;
// with --code, the kernel compiled (not run) and what the compiler made of it: the cpu object's
// instruction mix (objdump), a cuda kernel's PTX instruction mix and ptxas's figures (registers,
// spills, shared memory).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/predict.hpp"

namespace kforge::cli {

namespace {

// Compiles (never runs) the kernel on its language's backend: the cpu object's instruction mix,
// and whatever the compiler reports (ptxas for cuda: registers, spills, shared memory).
Features code_features(const KernelSpec& kernel, const ParamValues& params, DType dtype) {
  const std::string backend_name = kernel.lang == Lang::cpp ? "cpu" : kernel.lang == Lang::cuda ? "cuda" : "opencl";
  auto backend = make_backend(backend_name, {});
  const auto module = backend->compile(kernel.source, kernel.entry, defines_for(params, dtype), kernel.source_path);
  Features f;
  if (!module->object_file.empty()) f = object_code_features(module->object_file, kernel.entry);
  const CompilerResources& r = module->resources;
  if (r.known()) {  // -1: a figure this backend cannot know, left out
    for (const auto& [name, v] : {std::pair{"compiler_registers", static_cast<double>(r.registers)},
                                  std::pair{"compiler_spill_store_bytes", static_cast<double>(r.spill_store_bytes)},
                                  std::pair{"compiler_spill_load_bytes", static_cast<double>(r.spill_load_bytes)},
                                  std::pair{"compiler_stack_bytes", static_cast<double>(r.stack_bytes)},
                                  std::pair{"compiler_shared_bytes", static_cast<double>(r.shared_bytes)},
                                  std::pair{"compiler_private_bytes", static_cast<double>(r.private_bytes)}})
      if (v >= 0) f.add(name, v);
  }
  if (f.names.empty())
    throw UsageError("--code: the " + backend_name + " backend leaves no compiled object or compiler report to read");
  return f;
}

}  // namespace

void add_features(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("features", "the features a performance model sees (no hardware needed)");
  struct Opts { std::string problem, sizes, dtype = "fp32", params, lang = "cpp"; bool json = false, code = false; };
  auto o = std::make_shared<Opts>();
  cmd->add_option("problem", o->problem, "a problem name (see `kforge list`) or a problem file")->required();
  cmd->add_option("--sizes,-s", o->sizes, "sizes, e.g. M=512,N=512,K=512 (default: the problem's)");
  cmd->add_option("--dtype", o->dtype, "element type")->capture_default_str();
  cmd->add_option("--params,-p", o->params, "kernel parameters, e.g. MR=6,NV=2 (the rest keep their defaults)");
  cmd->add_option("--kernel-lang", o->lang, "whose library kernel: cpp, opencl or cuda")->capture_default_str();
  cmd->add_flag("--code", o->code, "also compile the kernel (it is not run) and add the compiled code's features: "
                "the cpu object's instruction mix, or a cuda kernel's PTX instruction mix and ptxas figures (sm_90)");
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o, &code] {
    const auto problem = find_problem(o->problem);
    const Sizes sizes = problem->resolve_sizes(parse_assignments(o->sizes));
    const DType dtype = parse_dtype(o->dtype);
    const KernelSpec kernel = library_kernel(*problem, parse_lang(o->lang), sizes);
    const ParamValues params = kernel.resolve(parse_assignments(o->params));
    if (auto why = kernel.check(params, sizes)) throw UsageError("--params: " + *why);
    std::vector<std::pair<std::string, double>> named;
    for (const auto& [k, v] : params) named.emplace_back(k, static_cast<double>(v));
    const Features pf = problem_features(*problem, sizes, dtype), cf = param_features(named);
    const Features kf = o->code ? code_features(kernel, params, dtype) : Features{};
    code = kExitPassed;
    if (o->json) {
      nlohmann::json doc{{"problem", problem->name()}, {"kernel", kernel.name},
                         {"problem_features", pf.to_json()}, {"config_features", cf.to_json()}};
      if (o->code) doc["code_features"] = kf.to_json();
      fmt::print("{}\n", doc.dump(2));
      return;
    }
    fmt::print("{} / {} ({})\n", problem->name(), kernel.name, format_sizes(sizes));
    for (const Features* f : {&pf, &cf, &kf}) {
      if (f == &kf && !o->code) continue;
      fmt::print("{}\n", f == &pf ? "problem:" : f == &cf ? "configuration:" : "compiled code (static counts):");
      for (std::size_t i = 0; i < f->names.size(); ++i) fmt::print("  {:<28} {:.6g}\n", f->names[i], f->values[i]);
    }
  });
}

}  // namespace kforge::cli
