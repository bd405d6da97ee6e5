#include "mcp/tools.hpp"

namespace kforge::mcp {

nlohmann::json Tool::listing() const {
  return {
      {"name", name},
      {"title", title},
      {"description", description},
      {"inputSchema", input_schema},
      {"annotations", {{"title", title}, {"readOnlyHint", read_only}, {"openWorldHint", false}}}};
}

const std::vector<Tool>& tools() {
  static const std::vector<Tool> all = {
      list_problems_tool(), describe_problem_tool(), evaluate_tool(), bench_tool(),
      tune_tool(),          history_tool(),          ceilings_tool()};
  return all;
}

const Tool* find_tool(std::string_view name) {
  for (const auto& t : tools())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace kforge::mcp
