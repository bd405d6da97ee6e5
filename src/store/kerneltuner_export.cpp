// `kforge db export --format kerneltuner`: one Kernel Tuner cache file from stored evaluations.
// Imported entries are written back verbatim (their header from the run that imported them), so
// exporting what an export imported reproduces the file.
#include <map>
#include <set>

#include <fmt/format.h>

#include "kforge/problem.hpp"
#include "store/kerneltuner.hpp"

namespace kforge {
namespace {

using ojson = nlohmann::ordered_json;

std::string group_of(const StoredEvaluation& e) {
  return fmt::format("{} {} {} kernel {} ({}) on {} [{}]", e.key.problem, e.key.sizes, e.key.dtype,
                     e.kernel, e.key.source_hash, e.key.backend, e.key.fingerprint);
}

// A parameter value as Python's str() spells it in a Kernel Tuner cache key.
std::string key_part(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  return v.dump();
}

std::vector<std::int64_t> problem_size(const StoredEvaluation& e) {
  const nlohmann::json sizes = e.sizes();
  std::vector<std::int64_t> out;
  try {  // the problem's own size order (M, N, K), when kforge knows the problem
    for (const auto& n : find_problem(e.key.problem)->size_names())
      if (sizes.contains(n)) out.push_back(sizes[n].get<std::int64_t>());
    if (out.size() == sizes.size()) return out;
  } catch (const std::exception&) {
  }
  out.clear();
  for (const auto& [k, v] : sizes.items()) out.push_back(v.get<std::int64_t>());
  return out;
}

// The header of the run that imported every one of `es`, if they share one.
std::optional<ojson> imported_header(const Store& s, const std::vector<StoredEvaluation>& es) {
  std::optional<ojson> header;
  std::set<std::int64_t> seen;
  for (const auto& e : es) {
    if (!e.extra.contains("entry") || !seen.insert(e.run_id).second) continue;
    const auto run = s.run(e.run_id);
    if (!run || !run->meta.contains("kerneltuner")) return std::nullopt;
    if (header && *header != run->meta.at("kerneltuner")) return std::nullopt;
    header = run->meta.at("kerneltuner");
  }
  for (const auto& e : es)
    if (!e.extra.contains("entry")) return std::nullopt;
  return header;
}

ojson synthesized_header(const std::vector<StoredEvaluation>& es) {
  const StoredEvaluation& first = es.front();
  std::map<std::string, std::set<nlohmann::json>> values;
  for (const auto& e : es) {
    const nlohmann::json p = e.params();
    for (const auto& [k, v] : p.items()) values[k].insert(v);
  }
  ojson keys = ojson::array(), params = ojson::object();
  for (const auto& [k, vs] : values) {
    keys.push_back(k);
    params[k] = ojson::array();
    for (const auto& v : vs) params[k].push_back(ojson::parse(v.dump()));
  }
  return {{"schema_version", "1.0.0"},
          {"device_name", first.device},
          {"kernel_name", first.kernel},
          {"problem_size", problem_size(first)},
          {"tune_params_keys", keys},
          {"tune_params", params},
          {"objective", "time"},
          {"kforge",
           {{"problem", first.key.problem},
            {"sizes", ojson::parse(first.key.sizes)},
            {"dtype", first.key.dtype},
            {"kernel", first.kernel},
            {"source_hash", first.key.source_hash},
            {"backend", first.key.backend},
            {"device", first.device},
            {"fingerprint", first.key.fingerprint}}}};
}

// A kforge evaluation in Kernel Tuner's words: milliseconds, error strings for failures.
ojson native_entry(const StoredEvaluation& e) {
  ojson j = ojson::object();
  double bench_ms = 0;
  for (double t : e.samples) bench_ms += t * 1e3;
  if (e.disposition == "passed" && e.median_s) {
    j["time"] = *e.median_s * 1e3;
    j["times"] = ojson::array();
    for (double t : e.samples) j["times"].push_back(t * 1e3);
  } else {
    j["time"] = kerneltuner::error_name(e.disposition);
  }
  j["compile_time"] = e.compile_s * 1e3;
  j["verification_time"] = 0;
  j["benchmark_time"] = bench_ms;
  j["strategy_time"] = 0;
  j["framework_time"] = 0;
  j["timestamp"] = e.finished;
  if (e.gflops) j["GFLOP/s"] = *e.gflops;
  if (e.disposition != "passed") {
    j["kforge_disposition"] = e.disposition;
    j["kforge_error"] = e.error;
  }
  return j;
}

}  // namespace

std::string export_kerneltuner(const Store& s, const std::vector<StoredEvaluation>& es) {
  if (es.empty()) throw StoreError("nothing to export: no stored evaluation matches");
  std::map<std::string, int> groups;
  for (const auto& e : es) ++groups[group_of(e)];
  if (groups.size() > 1) {
    std::string list;
    for (const auto& [g, n] : groups) list += fmt::format("\n  {} evaluation(s): {}", n, g);
    throw StoreError("a Kernel Tuner cache file holds one kernel on one problem instance and machine; "
                     "the selection holds " + std::to_string(groups.size()) +
                     " (narrow it with --run, --problem, --backend or --kernel):" + list);
  }
  const auto imported = imported_header(s, es);
  const ojson header = imported ? *imported : synthesized_header(es);
  std::vector<std::string> keys;
  for (const auto& k : header.at("tune_params_keys")) keys.push_back(k.get<std::string>());

  std::string out = "{\n";
  for (const auto& [k, v] : header.items()) out += ojson(k).dump() + ": " + v.dump() + ",\n";
  out += "\"cache\": {";
  bool first = true;
  for (const auto& e : es) {
    const nlohmann::json params = e.params();
    ojson entry = ojson::object();
    std::string key;
    for (const auto& k : keys) {
      if (!params.contains(k))
        throw StoreError(fmt::format("evaluation {} lacks parameter '{}' of the exported space", e.id, k));
      entry[k] = ojson::parse(params[k].dump());
      key += (key.empty() ? "" : ",") + key_part(params[k]);
    }
    if (e.extra.contains("key")) key = e.extra["key"].get<std::string>();
    const ojson rest = e.extra.contains("entry") ? e.extra["entry"] : native_entry(e);
    for (const auto& [k, v] : rest.items()) entry[k] = v;
    out += (first ? "\n" : ",\n") + ojson(key).dump() + ": " + entry.dump();
    first = false;
  }
  out += "\n}\n}\n";
  return out;
}

}  // namespace kforge
