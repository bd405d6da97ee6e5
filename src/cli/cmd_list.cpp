// `kforge list`: problems, their kernels with languages and spaces, and this machine's backends.
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/problem_file.hpp"
#include "kforge/rng.hpp"
#include "problem/kernelbench_problem.hpp"

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
// followed by its magnitude; scratch tensors are the kernel's only, not passed), sizes as
// int64_t, scalars as double.
std::string reference_signature(const Problem& p) {
  std::string sig;
  for (const auto& t : p.tensors()) {
    if (t.role == Role::scratch) continue;
    sig += fmt::format("{}double* {}, ", t.role == Role::in ? "const " : "", t.name);
    if (t.role != Role::in) sig += fmt::format("double* {}_magnitude, ", t.name);
  }
  for (const auto& n : p.size_names()) sig += "int64_t " + n + ", ";
  for (const auto& n : p.scalar_names()) sig += "double " + n + ", ";
  sig.resize(sig.size() - 2);
  return "(" + sig + ")";
}

// A KernelBench problem at `s`: each tensor's shape and dtype, the FLOP estimate, the fixed
// arguments; with `run`, its reference computed once on kforge's inputs.
nlohmann::json kernelbench_json(const KernelBenchProblem& p, const Sizes& s, bool run) {
  nlohmann::json j;
  const KbShape sh = p.shape(s, true);
  j["sizes"] = s;
  for (const auto& t : sh.tensors) {
    nlohmann::json tj = {{"name", t.name}, {"role", t.role == Role::in ? "in" : "out"}, {"shape", t.shape},
                         {"dtype", t.dtype}};
    if (!t.condition.empty()) tj["condition"] = t.condition;
    if (t.condition == "index") tj["range"] = {t.low, t.high};
    if (t.condition == "flag") tj["p"] = t.low;
    j["tensors"].push_back(tj);
  }
  j["fixed_arguments"] = sh.fixed;
  j["flops"] = sh.counted ? nlohmann::json(sh.flops) : nlohmann::json("unknown");
  j["reduction_length"] = sh.length;
  j["memory_needed_bytes"] = p.memory_needed(s);
  j["memory_budget_bytes"] = KernelBenchProblem::memory_budget();
  if (run) {
    p.check_sizes(s);
    const auto t0 = std::chrono::steady_clock::now();
    const Instance inst = p.make_instance(s, DType::fp32, Distribution::normal, 1, 0);
    std::vector<std::vector<double>> out, mag;
    p.reference(inst, out, mag);
    j["reference_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    j["reference_ran"] = true;
  }
  return j;
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
  auto sizes = std::make_shared<std::string>();
  auto max_size = std::make_shared<std::int64_t>(0);
  auto run = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print one JSON document");
  cmd->add_option("--problems", *folder, "list the problem files in this folder instead of the library");
  cmd->add_option("--problem", *one, "one problem (a name or a problem file): its ABI for each language");
  cmd->add_option("--size", *sizes, "with --problem: sizes to show it at, NAME=V,...");
  cmd->add_option("--max-size", *max_size, "with --problem: rebind every size above this value to it");
  cmd->add_flag("--run-reference", *run, "with --problem: compute its reference once at those sizes");
  cmd->callback([json, folder, one, sizes, max_size, run, &code] {
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
    if (!one->empty()) {
      Sizes over;
      for (const auto& [k, v] : listed[0]->default_sizes())
        if (*max_size > 0 && v > *max_size) over[k] = *max_size;
      for (const auto& [k, v] : parse_assignments(*sizes)) over[k] = v;
      Sizes at = listed[0]->default_sizes();
      for (const auto& [k, v] : over) at[k] = v;
      if (const auto* kb = dynamic_cast<const KernelBenchProblem*>(listed[0].get())) {
        doc["problems"][0]["at"] = kernelbench_json(*kb, at, *run);
      } else if (*run || !over.empty()) {
        const Sizes s = listed[0]->resolve_sizes(over);
        doc["problems"][0]["at"] = {{"sizes", s}};
        if (*run) {
          const Instance inst = listed[0]->make_instance(s, listed[0]->dtypes().at(0), Distribution::normal, 1, 0);
          std::vector<std::vector<double>> out, mag;
          listed[0]->reference(inst, out, mag);
          doc["problems"][0]["at"]["reference_ran"] = true;
        }
      }
    }
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
          if (lang != "reference" || !pj.contains("at") || !pj["at"].contains("tensors"))
            fmt::print("    abi {:<9} {}\n", lang, sig.get<std::string>());
      if (pj.contains("at")) {
        const auto& at = pj["at"];
        fmt::print("    at {}\n", format_sizes(at["sizes"].get<Sizes>()));
        if (at.contains("tensors")) {
          for (const auto& t : at["tensors"]) {
            std::string cond;
            if (t.contains("range")) cond = fmt::format("  indices in [{}, {})", t["range"][0].get<double>(), t["range"][1].get<double>());
            if (t.contains("p")) cond = fmt::format("  flags, p={:.3g}", t["p"].get<double>());
            if (t.value("condition", std::string()) == "positive") cond = "  positive (the reference needs it)";
            fmt::print("      {:<4} {:<16} {:<8} {}{}\n", t["role"].get<std::string>(), t["name"].get<std::string>(),
                       t["dtype"].get<std::string>(), t["shape"].dump(), cond);
          }
          for (const auto& [k, v] : at["fixed_arguments"].items())
            fmt::print("      fixed forward argument {} = {}\n", k, v.get<std::string>());
          fmt::print("      flops {}  (an estimate: aten ops counted on fake tensors)\n",
                     at["flops"].is_string() ? "unknown: SOL is memory-bound only" : fmt::format("{:.4g}", at["flops"].get<double>()));
          fmt::print("      memory about {:.3g} GiB of a {:.3g} GiB budget{}\n", at["memory_needed_bytes"].get<double>() / (1ull << 30),
                     at["memory_budget_bytes"].get<double>() / (1ull << 30),
                     at["memory_needed_bytes"].get<double>() > at["memory_budget_bytes"].get<double>() ? ": does not fit" : "");
        }
        if (at.contains("reference_ran"))
          fmt::print("      reference ran{}\n", at.contains("reference_s") ? fmt::format(" in {:.3g} s", at["reference_s"].get<double>()) : "");
      }
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
