#include "kforge/kernel.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "kforge/cpu_target.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge {

std::string_view lang_name(Lang l) {
  switch (l) {
    case Lang::cpp: return "cpp";
    case Lang::opencl: return "opencl";
    case Lang::cuda: return "cuda";
  }
  return "?";
}

Lang parse_lang(std::string_view name) {
  for (Lang l : {Lang::cpp, Lang::opencl, Lang::cuda})
    if (lang_name(l) == name) return l;
  throw UsageError("unknown language '" + std::string(name) + "': use cpp, opencl or cuda");
}

std::string default_entry(std::string problem) {
  for (char& c : problem)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return problem;
}

KernelSpec KernelSpec::from_json_with_source(const nlohmann::json& j, std::string source) {
  KernelSpec s;
  const std::string where = j.value("name", std::string("kernel spec"));
  try {
    s.name = j.value("name", std::string("candidate"));
    s.problem = j.value("problem", std::string());
    s.lang = parse_lang(j.value("lang", std::string("cpp")));
    s.entry = j.value("entry", default_entry(s.problem));
    s.source = std::move(source);
    if (j.contains("dtypes")) {
      s.dtypes.clear();
      for (const auto& d : j.at("dtypes")) s.dtypes.push_back(parse_dtype(d.get<std::string>()));
    }
    if (j.contains("params")) {
      for (const auto& [name, values] : j.at("params").items()) {
        Param p{name, {}};
        for (const auto& v : values) p.values.push_back(v.get<std::int64_t>());
        if (p.values.empty()) throw UsageError("parameter " + name + " has no values");
        s.params.push_back(std::move(p));
      }
    }
    for (const auto& p : s.params) s.defaults[p.name] = p.values.front();
    if (j.contains("defaults"))
      for (const auto& [name, v] : j.at("defaults").items()) s.defaults[name] = v.get<std::int64_t>();
    if (j.contains("constraints"))
      for (const auto& c : j.at("constraints")) s.constraints.push_back(Expr::parse(c.get<std::string>()));
    if (j.contains("applies"))
      for (const auto& c : j.at("applies")) s.applies.push_back(Expr::parse(c.get<std::string>()));
    auto dims = [&](const char* key, std::array<Expr, 3>& out) {
      if (!j.contains(key)) return;
      const auto& a = j.at(key);
      if (!a.is_array() || a.empty() || a.size() > 3)
        throw UsageError(std::string("\"") + key + "\" must be a list of 1 to 3 expressions");
      for (std::size_t i = 0; i < a.size(); ++i)
        out[i] = Expr::parse(a[i].is_string() ? a[i].get<std::string>() : a[i].dump());
    };
    dims("grid", s.grid);
    dims("block", s.block);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("malformed kernel spec '" + where + "': " + e.what());
  }
  return s;
}

nlohmann::json KernelSpec::to_json(bool with_source) const {
  nlohmann::json j;
  j["name"] = name;
  j["problem"] = problem;
  j["lang"] = lang_name(lang);
  j["entry"] = entry;
  j["source"] = source_path;
  if (with_source) j["source_text"] = source;
  j["dtypes"] = nlohmann::json::array();
  for (DType d : dtypes) j["dtypes"].push_back(dtype_name(d));
  j["params"] = nlohmann::json::object();
  for (const auto& p : params) j["params"][p.name] = p.values;
  j["defaults"] = defaults;
  j["constraints"] = nlohmann::json::array();
  for (const auto& c : constraints) j["constraints"].push_back(c.text());
  if (!applies.empty())
    for (const auto& a : applies) j["applies"].push_back(a.text());
  for (int i = 0; i < 3; ++i) {
    j["grid"].push_back(grid[i].text());
    j["block"].push_back(block[i].text());
  }
  return j;
}

ParamValues KernelSpec::resolve(const ParamValues& overrides) const {
  ParamValues out = defaults;
  for (const auto& [name, v] : overrides) {
    auto it = std::find_if(params.begin(), params.end(), [&](const Param& p) { return p.name == name; });
    if (it == params.end()) {
      std::string known;
      for (const auto& p : params) known += (known.empty() ? "" : ", ") + p.name;
      throw UsageError("kernel " + this->name + " has no parameter '" + name + "' (it has: " +
                       (known.empty() ? "none" : known) + ")");
    }
    out[name] = v;
  }
  return out;
}

namespace {
Bindings bind(const ParamValues& p, const Sizes& s) {
  Bindings b(s.begin(), s.end());
  for (const auto& [k, v] : p) b[k] = v;
  return b;
}
}  // namespace

std::optional<std::string> KernelSpec::check(const ParamValues& p, const Sizes& s) const {
  for (const auto& param : params) {
    auto it = p.find(param.name);
    if (it == p.end()) return "parameter " + param.name + " has no value";
    if (std::find(param.values.begin(), param.values.end(), it->second) == param.values.end())
      return "parameter " + param.name + "=" + std::to_string(it->second) +
             " is not one of its values";
  }
  const Bindings b = bind(p, s);
  for (const auto& c : constraints)
    if (!c.eval(b)) return "constraint '" + c.text() + "' does not hold";
  return std::nullopt;
}

LaunchGeometry KernelSpec::geometry(const ParamValues& p, const Sizes& s) const {
  const Bindings b = bind(p, s);
  LaunchGeometry g{{grid[0].eval(b), grid[1].eval(b), grid[2].eval(b)},
                   {block[0].eval(b), block[1].eval(b), block[2].eval(b)}};
  for (std::int64_t v : {g.grid.x, g.grid.y, g.grid.z, g.block.x, g.block.y, g.block.z})
    if (v < 1) throw UsageError("kernel " + name + ": launch geometry has a dimension < 1");
  return g;
}

bool KernelSpec::applies_to(const Sizes& s) const {
  Bindings b(s.begin(), s.end());
  // The vector width is asked of the compiler only where a spec reads it (a batched/unbatched
  // crossover that moves with the width: signature_large_cpu.json).
  for (const auto& a : applies)
    for (const auto& n : a.names())
      if (n == "CPU_SIMD_FLOATS" && !b.contains(n)) b[n] = cpu_simd_floats();
  for (const auto& a : applies)
    if (!a.eval(b)) return false;
  return true;
}

std::uint64_t KernelSpec::space_size() const {
  std::uint64_t n = 1;
  for (const auto& p : params) n *= p.values.size();
  return n;
}

namespace {

// "A=1,B=2" with each value read by `parse` (which must consume all of it); `kind` names the
// expected value in the error.
template <class T, class Parse>
std::map<std::string, T> parse_items(const std::string& text, const char* kind, Parse parse) {
  std::map<std::string, T> out;
  if (trim(text).empty()) return out;
  for (const std::string& item : split(text, ',')) {
    const auto eq = item.find('=');
    const std::string name = trim(item.substr(0, eq));
    if (eq == std::string::npos || name.empty())
      throw UsageError("bad assignment '" + item + "': write NAME=VALUE, comma-separated");
    const std::string value = trim(item.substr(eq + 1));
    try {
      std::size_t used = 0;
      out[name] = parse(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw UsageError("bad value in '" + item + "': " + name + " needs " + kind);
    }
  }
  return out;
}

}  // namespace

std::map<std::string, std::int64_t> parse_assignments(const std::string& text) {
  return parse_items<std::int64_t>(text, "an integer",
                                   [](const std::string& v, std::size_t* used) { return std::stoll(v, used); });
}

std::map<std::string, double> parse_real_assignments(const std::string& text) {
  return parse_items<double>(text, "a number",
                             [](const std::string& v, std::size_t* used) { return std::stod(v, used); });
}

}  // namespace kforge
