// `kforge list`: problems, their kernels with languages and spaces, and this machine's backends.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"
#include "kforge/problem_file.hpp"

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

// The reference function a problem file's C++ defines: every tensor in double (each output
// followed by its magnitude), sizes as int64_t, scalars as double.
std::string reference_signature(const Problem& p) {
  std::string sig;
  for (const auto& t : p.tensors()) {
    sig += fmt::format("{}double* {}, ", t.role == Role::in ? "const " : "", t.name);
    if (t.role != Role::in) sig += fmt::format("double* {}_magnitude, ", t.name);
  }
  for (const auto& n : p.size_names()) sig += "int64_t " + n + ", ";
  for (const auto& n : p.scalar_names()) sig += "double " + n + ", ";
  sig.resize(sig.size() - 2);
  return "(" + sig + ")";
}

nlohmann::json problem_json(const Problem& p) {
  nlohmann::json pj = {{"name", p.name()}, {"description", p.description()},
                       {"sizes", p.default_sizes()}, {"baseline", p.baseline_name()},
                       {"scalars", p.scalars_for_trial(1)}};  // the values timed runs use
  if (!p.source_file().empty()) pj["file"] = p.source_file();
  for (DType d : p.dtypes()) pj["dtypes"].push_back(dtype_name(d));
  for (Lang l : {Lang::cpp, Lang::opencl, Lang::cuda}) pj["abi"][lang_name(l)] = p.signature(l);
  pj["abi"]["reference"] = reference_signature(p);
  pj["kernels"] = nlohmann::json::array();
  for (const auto& k : library_kernels(p)) {
    nlohmann::json kj = k.to_json();
    kj["space_size"] = k.space_size();
    kj["signature"] = p.signature(k.lang);
    pj["kernels"].push_back(kj);
  }
  return pj;
}
}  // namespace

void add_list(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("list", "list problems, kernels and backends");
  auto json = std::make_shared<bool>(false);
  auto folder = std::make_shared<std::string>();
  auto one = std::make_shared<std::string>();
  cmd->add_flag("--json", *json, "print one JSON document");
  cmd->add_option("--problems", *folder, "list the problem files in this folder instead of the library");
  cmd->add_option("--problem", *one, "one problem (a name or a problem file): its ABI for each language");
  cmd->callback([json, folder, one, &code] {
    nlohmann::json doc = {{"problems", nlohmann::json::array()}, {"backends", backends_json()}};
    std::vector<std::shared_ptr<Problem>> listed;
    if (!one->empty()) listed = {find_problem(*one)};
    else if (!folder->empty()) listed = problems_in(*folder);
    else {
      listed = problems();
      for (const auto& dir : problem_path())  // $KFORGE_PROBLEM_PATH's problem files too
        for (const auto& p : problems_in(dir)) listed.push_back(p);
    }
    for (const auto& p : listed) doc["problems"].push_back(problem_json(*p));
    code = kExitPassed;
    if (*json) { fmt::print("{}\n", doc.dump(2)); return; }
    fmt::print("Problems\n");
    for (const auto& pj : doc["problems"]) {
      fmt::print("  {:<10} {}\n", pj["name"].get<std::string>(), pj["description"].get<std::string>());
      fmt::print("    sizes {}{}\n", format_sizes(pj["sizes"].get<Sizes>()),
                 format_scalars(pj["scalars"].get<Scalars>()));
      if (pj.contains("file")) fmt::print("    file {}\n", pj["file"].get<std::string>());
      if (!one->empty())
        for (const auto& [lang, sig] : pj["abi"].items())
          fmt::print("    abi {:<9} {}\n", lang, sig.get<std::string>());
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
