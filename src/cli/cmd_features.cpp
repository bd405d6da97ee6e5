// `kforge features`: what a performance model sees of a problem instance and a configuration,
// without running anything: the problem's sizes and counts, every parameter and derived ones.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/error.hpp"
#include "kforge/predict.hpp"

namespace kforge::cli {

void add_features(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("features", "the features a performance model sees (no hardware needed)");
  struct Opts { std::string problem, sizes, dtype = "fp32", params, lang = "cpp"; bool json = false; };
  auto o = std::make_shared<Opts>();
  cmd->add_option("problem", o->problem, "a problem name (see `kforge list`) or a problem file")->required();
  cmd->add_option("--sizes,-s", o->sizes, "sizes, e.g. M=512,N=512,K=512 (default: the problem's)");
  cmd->add_option("--dtype", o->dtype, "element type")->capture_default_str();
  cmd->add_option("--params,-p", o->params, "kernel parameters, e.g. MR=6,NV=2 (the rest keep their defaults)");
  cmd->add_option("--kernel-lang", o->lang, "whose library kernel: cpp, opencl or cuda")->capture_default_str();
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
    code = kExitPassed;
    if (o->json) {
      fmt::print("{}\n", nlohmann::json{{"problem", problem->name()}, {"kernel", kernel.name},
                                        {"problem_features", pf.to_json()}, {"config_features", cf.to_json()}}.dump(2));
      return;
    }
    fmt::print("{} / {} ({})\n", problem->name(), kernel.name, format_sizes(sizes));
    for (const Features* f : {&pf, &cf}) {
      fmt::print("{}\n", f == &pf ? "problem:" : "configuration:");
      for (std::size_t i = 0; i < f->names.size(); ++i) fmt::print("  {:<24} {:.6g}\n", f->names[i], f->values[i]);
    }
  });
}

}  // namespace kforge::cli
