#pragma once
// Checks a tool's arguments against its input schema before the tool runs, so a bad argument
// is answered with the argument's path and what was expected, never a crash deep inside. The
// subset of JSON Schema the tools' schemas use: type (object, string, integer, number, boolean,
// array), properties, required, additionalProperties (false or a schema), enum, minimum,
// maximum, items.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace kforge::mcp {

// Empty when `value` conforms; else the first violation in words, naming its path
// ("arguments.sizes.M: expected an integer, got \"64\"").
[[nodiscard]] std::optional<std::string> schema_violation(const nlohmann::json& schema,
                                                          const nlohmann::json& value,
                                                          const std::string& path = "arguments");

}  // namespace kforge::mcp
