#pragma once
// The tools `kforge mcp` serves: each a name, a description an agent reads, a JSON Schema for
// its arguments (checked before it runs), and the function that runs it. Every tool returns
// structured JSON plus a text for a model to read; a failure of the tool itself (a bad problem
// name, a kernel that does not compile) is a result with isError, not a protocol error.
#include <atomic>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/evaluate.hpp"

namespace kforge::mcp {

// What the server was started with (`kforge mcp --help`).
struct ServerOptions {
  std::filesystem::path db;  // the results store: evaluate, bench and tune record there
  bool record = true;        // false: --no-db (history then reads `db` if it exists)
  std::vector<std::string> problem_dirs;  // --problems: listed beside the library's
  IsolationLimits limits;                 // for every candidate's worker
  int jobs = 4;  // calls of tools that run kernels at once; more wait their turn
};

// One call of a tool, as its function sees it.
struct ToolCall {
  nlohmann::json args;  // already checked against the tool's input schema
  const ServerOptions* options = nullptr;
  // Reports progress (a notifications/progress when the request carried a progressToken, else
  // nothing); `progress` must grow from call to call, `total` is 0 when unknown.
  std::function<void(double progress, double total, const std::string& message)> progress;
  // Set when the client sent notifications/cancelled for this request.
  const std::atomic<bool>* cancelled = nullptr;
  [[nodiscard]] bool is_cancelled() const { return cancelled && cancelled->load(); }
};

struct ToolResult {
  nlohmann::json structured = nlohmann::json::object();  // structuredContent
  std::string text;                                      // content[0].text
  bool is_error = false;
};

struct Tool {
  std::string name, title, description;
  nlohmann::json input_schema;
  bool read_only = false;  // annotations.readOnlyHint; the others run kernels and take a job slot
  std::function<ToolResult(const ToolCall&)> run;  // throws UsageError etc. for a tool error
  [[nodiscard]] nlohmann::json listing() const;    // as tools/list shows it
};

[[nodiscard]] const std::vector<Tool>& tools();
[[nodiscard]] const Tool* find_tool(std::string_view name);

// Each tool, in its own file.
[[nodiscard]] Tool list_problems_tool();
[[nodiscard]] Tool describe_problem_tool();
[[nodiscard]] Tool evaluate_tool();
[[nodiscard]] Tool bench_tool();
[[nodiscard]] Tool tune_tool();
[[nodiscard]] Tool history_tool();
[[nodiscard]] Tool ceilings_tool();

}  // namespace kforge::mcp
