#include "mcp/schema.hpp"

#include <fmt/format.h>

#include <cmath>

namespace kforge::mcp {
namespace {

using nlohmann::json;

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "number") return v.is_number();
  if (type ==
      "integer")  // 64.0 is an integer in JSON Schema; 64.5 is not, nor is 1e30 here (no int64)
    return v.is_number_integer() || (v.is_number_float() && std::fabs(v.get<double>()) < 9.2e18 &&
                                     std::floor(v.get<double>()) == v.get<double>());
  if (type == "null") return v.is_null();
  return false;
}

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

std::optional<std::string> schema_violation(const json& schema, const json& value,
                                            const std::string& path) {
  if (schema.contains("type")) {
    const json& t = schema["type"];
    bool ok = false;
    std::string expected;
    for (const auto& one : t.is_array() ? t : json::array({t})) {
      ok = ok || has_type(value, one.get<std::string>());
      expected += (expected.empty() ? "" : " or ") + one.get<std::string>();
    }
    if (!ok) return fmt::format("{}: expected {}, got {}", path, expected, shown(value));
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& e : schema["enum"]) found = found || e == value;
    if (!found)
      return fmt::format("{}: {} is not one of {}", path, shown(value), schema["enum"].dump());
  }
  if (value.is_number()) {
    const double x = value.get<double>();
    if (schema.contains("minimum") && x < schema["minimum"].get<double>())
      return fmt::format("{}: {} is below the minimum {}", path, shown(value),
                         schema["minimum"].dump());
    if (schema.contains("maximum") && x > schema["maximum"].get<double>())
      return fmt::format("{}: {} is above the maximum {}", path, shown(value),
                         schema["maximum"].dump());
  }
  if (value.is_array() && schema.contains("items"))
    for (std::size_t i = 0; i < value.size(); ++i)
      if (auto v = schema_violation(schema["items"], value[i], fmt::format("{}[{}]", path, i)))
        return v;
  if (value.is_object()) {
    for (const auto& name : schema.value("required", json::array()))
      if (!value.contains(name.get<std::string>()))
        return fmt::format("{}: \"{}\" is required", path, name.get<std::string>());
    const json props = schema.value("properties", json::object());
    for (const auto& [name, v] : value.items()) {
      if (props.contains(name)) {
        if (auto bad = schema_violation(props[name], v, path + "." + name)) return bad;
        continue;
      }
      const json extra = schema.value("additionalProperties", json(true));
      if (extra.is_boolean() && !extra.get<bool>()) {
        std::string known;
        for (const auto& [k, _] : props.items()) known += (known.empty() ? "" : ", ") + k;
        return fmt::format("{}: unknown property \"{}\" (known: {})", path, name, known);
      }
      if (extra.is_object())
        if (auto bad = schema_violation(extra, v, path + "." + name)) return bad;
    }
  }
  return std::nullopt;
}

}  // namespace kforge::mcp
