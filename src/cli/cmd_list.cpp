// `kforge list`: problems, their kernels with languages and spaces, and this machine's backends.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"

namespace kforge::cli {

namespace {
nlohmann::json backends_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& name : backend_names()) {
    nlohmann::json b = {{"name", name}};
    try {
      auto be = make_backend(name);
      b["device"] = be->device();
      b["can_run"] = be->can_run();
      b["lang"] = lang_name(be->lang());
    } catch (const std::exception& e) {
      b["device"] = std::string("unavailable: ") + e.what();
      b["can_run"] = false;
    }
    out.push_back(b);
  }
  return out;
}
}  // namespace

void add_list(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("list", "list problems, kernels and backends");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print one JSON document");
  cmd->callback([json, &code] {
    nlohmann::json doc = {{"problems", nlohmann::json::array()}, {"backends", backends_json()}};
    for (const auto& p : problems()) {
      nlohmann::json pj = {{"name", p->name()}, {"description", p->description()},
                           {"sizes", p->default_sizes()}, {"baseline", p->baseline_name()},
                           {"scalars", p->scalars_for_trial(1)}};  // the values timed runs use
      for (DType d : p->dtypes()) pj["dtypes"].push_back(dtype_name(d));
      for (const auto& k : library_kernels(*p)) {
        nlohmann::json kj = k.to_json();
        kj["space_size"] = k.space_size();
        kj["signature"] = p->signature(k.lang);
        pj["kernels"].push_back(kj);
      }
      doc["problems"].push_back(pj);
    }
    code = kExitPassed;
    if (*json) { fmt::print("{}\n", doc.dump(2)); return; }
    fmt::print("Problems\n");
    for (const auto& pj : doc["problems"]) {
      fmt::print("  {:<10} {}\n", pj["name"].get<std::string>(), pj["description"].get<std::string>());
      fmt::print("    sizes {}{}\n", format_sizes(pj["sizes"].get<Sizes>()),
                 format_scalars(pj["scalars"].get<Scalars>()));
      for (const auto& kj : pj["kernels"]) {
        std::string params;
        for (const auto& [n, v] : kj["params"].items()) params += fmt::format(" {}{}", n, v.dump());
        fmt::print("    {:<14} {:<7} space {:>7}:{}\n", kj["name"].get<std::string>(),
                   kj["lang"].get<std::string>(), kj["space_size"].get<std::uint64_t>(), params);
      }
    }
    fmt::print("Backends\n");
    for (const auto& b : doc["backends"])
      fmt::print("  {:<7} {}{}\n", b["name"].get<std::string>(), b["device"].get<std::string>(),
                 b["can_run"].get<bool>() ? "" : " (compiles only: cannot run here)");
  });
}

}  // namespace kforge::cli
