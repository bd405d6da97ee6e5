// `kforge ceilings`: this machine's bandwidth and peak FLOP/s per backend, measured by kforge's
// own micro-benchmarks and cached per machine fingerprint.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"
#include "kforge/measure.hpp"

namespace kforge::cli {

void add_ceilings(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("ceilings", "measure (or show cached) bandwidth and peak FLOP/s");
  struct Opts { std::string backends = "all"; bool remeasure = false, json = false; int threads = 0; };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--backend,-b", o->backends, "backends, comma-separated, or all")->capture_default_str();
  cmd->add_flag("--remeasure", o->remeasure, "ignore the cached figures and measure again");
  cmd->add_option("--threads", o->threads, "cpu backend threads (0: all cores)");
  cmd->add_flag("--json", o->json, "print one JSON document");
  cmd->callback([o, &code] {
    nlohmann::json doc = nlohmann::json::array();
    for (const auto& name : backend_list(o->backends)) {
      auto b = make_backend(name, {.threads = o->threads});
      if (!b->can_run()) continue;
      doc.push_back(ceilings(*b, o->remeasure).to_json());
      doc.back()["backend"] = name;
    }
    code = kExitPassed;
    if (o->json) { fmt::print("{}\n", doc.dump(2)); return; }
    fmt::print("{:<8} {:>12} {:>13} {:>13}  {}\n", "backend", "triad GB/s", "fp32 GFLOP/s", "fp64 GFLOP/s", "device");
    for (const auto& c : doc)
      fmt::print("{:<8} {:>12.1f} {:>13.1f} {:>13.1f}  {}\n", c["backend"].get<std::string>(),
                 c["bandwidth_GBs"].get<double>(), c["fp32_GFLOPs"].get<double>(),
                 c["fp64_GFLOPs"].get<double>(), c["fingerprint"].get<std::string>());
  });
}

}  // namespace kforge::cli
