// Kernel Tuner cache files, read as a recorded space and written from kforge's own results.
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "kforge/error.hpp"
#include "kforge/replay.hpp"

namespace kforge {

namespace {

std::string label_of(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A cache cut short by an interrupted run lacks its closing braces (and may end in a comma or
// half an entry): drop back to the last complete entry and close it.
nlohmann::json parse_maybe_truncated(const std::string& text, const std::string& path) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& first) {
    std::string t = text;
    for (int tries = 0; tries < 4 && !t.empty(); ++tries) {
      const auto end = t.find_last_of('}');
      if (end == std::string::npos) break;
      t.resize(end + 1);
      try {
        return nlohmann::json::parse(t + "}}");
      } catch (const nlohmann::json::parse_error&) {
        t.resize(end);  // drop this brace and try the previous one
      }
    }
    throw UsageError("cannot read Kernel Tuner cache " + path + ": " + first.what());
  }
}

}  // namespace

RecordedSpace RecordedSpace::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot open cache file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(parse_maybe_truncated(ss.str(), path), path);
}

RecordedSpace RecordedSpace::from_json(const nlohmann::json& j, const std::string& path) {
  RecordedSpace r;
  r.path = path;
  for (const char* key : {"tune_params_keys", "tune_params", "cache"})
    if (!j.contains(key)) throw UsageError("cache " + path + " has no \"" + key + "\": not a Kernel Tuner cache file");
  r.device = j.value("device_name", std::string());
  r.kernel = j.value("kernel_name", std::string());
  if (j.contains("sizes") && j.at("sizes").is_object())
    for (const auto& [name, v] : j.at("sizes").items())
      if (v.is_number_integer()) r.sizes[name] = v.get<std::int64_t>();
  std::vector<SpaceParam> params;
  std::vector<const nlohmann::json*> lists;
  for (const auto& k : j.at("tune_params_keys")) {
    const std::string name = k.get<std::string>();
    if (!j.at("tune_params").contains(name))
      throw UsageError("cache " + path + ": tune_params has no list for key '" + name + "'");
    const nlohmann::json& vals = j.at("tune_params").at(name);
    SpaceParam p{name, {}, {}};
    for (std::size_t i = 0; i < vals.size(); ++i) {
      p.labels.push_back(label_of(vals[i]));
      p.numbers.push_back(vals[i].is_number() ? vals[i].get<double>() : static_cast<double>(i));
    }
    params.push_back(std::move(p));
    lists.push_back(&vals);
  }
  std::vector<Config> members;
  std::vector<std::optional<double>> times;
  std::vector<std::string> errors;
  std::vector<double> costs;
  for (const auto& [key, e] : j.at("cache").items()) {
    Config c(params.size(), -1);
    std::vector<std::string> parts;
    std::stringstream ks(key);
    for (std::string part; std::getline(ks, part, ',');) parts.push_back(part);
    for (std::size_t d = 0; d < params.size(); ++d) {
      const nlohmann::json* lst = lists[d];
      if (e.contains(params[d].name)) {
        for (std::size_t i = 0; i < lst->size() && c[d] < 0; ++i)
          if ((*lst)[i] == e.at(params[d].name)) c[d] = static_cast<int>(i);
      } else if (d < parts.size()) {
        for (std::size_t i = 0; i < params[d].labels.size() && c[d] < 0; ++i)
          if (params[d].labels[i] == parts[d]) c[d] = static_cast<int>(i);
      }
      if (c[d] < 0)
        throw UsageError("cache " + path + ": entry '" + key + "' has a value of " + params[d].name +
                         " that is not in tune_params");
    }
    if (!e.contains("time")) throw UsageError("cache " + path + ": entry '" + key + "' has no \"time\"");
    const auto& t = e.at("time");
    double cost_ms = 0;
    bool timed = false;
    for (const char* f : {"compile_time", "verification_time", "benchmark_time"})
      if (e.contains(f) && e.at(f).is_number()) { cost_ms += e.at(f).get<double>(); timed = true; }
    if (t.is_number()) {
      times.push_back(t.get<double>());
      errors.emplace_back();
      if (!timed) cost_ms = t.get<double>();
    } else {
      times.push_back(std::nullopt);
      errors.push_back(t.is_string() ? t.get<std::string>() : t.dump());
    }
    costs.push_back(cost_ms / 1e3);
    members.push_back(std::move(c));
  }
  r.space = Space::from_members(std::move(params), members);
  r.time_ms = std::move(times);
  r.error = std::move(errors);
  r.cost_s = std::move(costs);
  bool any = false;
  for (const auto& t : r.time_ms) {
    if (!t) { ++r.failed; continue; }
    if (!any || *t < r.optimum_ms) r.optimum_ms = *t;
    any = true;
  }
  if (!any) throw UsageError("cache " + path + " has no successful configuration");
  return r;
}

Outcome RecordedSpace::evaluate(const Config& c) const {
  const auto rank = space.rank(c);
  if (!rank) return {std::nullopt, 0.0};  // not recorded: outside the space, costs nothing
  return {time_ms[*rank], cost_s[*rank]};
}

nlohmann::json kernel_tuner_cache(const KernelSpec& k, const Sizes& sizes, const std::string& device,
                                  const std::vector<EvalResult>& results) {
  nlohmann::json j;
  j["device_name"] = device;
  j["kernel_name"] = k.name;
  j["problem_size"] = nlohmann::json::array();
  for (const auto& [name, v] : sizes) j["problem_size"].push_back(v);
  j["sizes"] = sizes;  // kforge's addition: which size is which
  j["tune_params_keys"] = nlohmann::json::array();
  j["tune_params"] = nlohmann::json::object();
  for (const Param& p : k.params) {
    j["tune_params_keys"].push_back(p.name);
    j["tune_params"][p.name] = p.values;
  }
  j["objective"] = "time";
  j["cache"] = nlohmann::json::object();
  for (const EvalResult& e : results) {
    nlohmann::json entry;
    std::string key;
    for (const Param& p : k.params) {
      const std::int64_t v = e.params.count(p.name) ? e.params.at(p.name) : k.defaults.at(p.name);
      entry[p.name] = v;
      key += (key.empty() ? "" : ",") + std::to_string(v);
    }
    switch (e.disposition) {
      case Disposition::passed: entry["time"] = e.timing ? e.timing->median_s * 1e3 : 0.0; break;
      case Disposition::invalid_config: entry["time"] = "InvalidConfig"; break;
      case Disposition::compile_error: entry["time"] = "CompilationFailedConfig"; break;
      default: entry["time"] = "RuntimeFailedConfig"; break;
    }
    entry["disposition"] = disposition_name(e.disposition);
    double bench_ms = 0;
    if (e.timing)
      for (double s : e.timing->samples) bench_ms += s * 1e3;
    entry["compile_time"] = e.compile_s * 1e3;
    entry["verification_time"] = 0;
    entry["benchmark_time"] = bench_ms;
    j["cache"][key] = std::move(entry);
  }
  return j;
}

}  // namespace kforge
