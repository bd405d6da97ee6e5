#pragma once
// What the tools share: the schema of a problem instance (problem, sizes, dtype, scalars,
// params, backend, verification), a request built from it, and recording results in the store.
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "mcp/tools.hpp"

namespace kforge::mcp {

using nlohmann::json;

// JSON Schema properties of an instance: problem, sizes, dtype, scalars, params, backend,
// quick, seed. `tools` picks the ones a tool takes.
[[nodiscard]] json instance_property(const std::string& name);
// An object schema with those properties (plus `extra`), `required` ones, no others.
[[nodiscard]] json object_schema(const std::vector<std::string>& instance, json extra,
                                 const std::vector<std::string>& required);
// The measurement options a timing tool takes (min_time_s, max_time_s, repetitions, cold).
[[nodiscard]] json measure_property();
void apply_measure(const json& args, MeasureOptions& m);

// The problem named by args.problem: a library name, a problem file, or one in a folder the
// server lists. Throws UsageError / ProblemError (the tool's error).
[[nodiscard]] std::shared_ptr<Problem> problem_of(const json& args, const ServerOptions& o);
[[nodiscard]] Sizes sizes_of(const json& args, const Problem& p);
[[nodiscard]] std::string backend_of(const json& args, Lang lang);
[[nodiscard]] Lang lang_of_backend(const std::string& backend);
// A backend in the server's own process, never made while a measurement runs here (opening
// OpenCL is serialized in the backend itself: PoCL crashes when two threads open it at once).
[[nodiscard]] std::unique_ptr<Backend> open_backend(const std::string& name);
// Held while a call uses a backend in the server's own process (ceilings): one at a time, so
// that one call does not disturb the other's measurement. open_backend takes it too.
[[nodiscard]] std::unique_lock<std::recursive_mutex> in_process_measurement();

// A request for `kernel`, from the instance arguments (verification thorough unless args.quick).
[[nodiscard]] EvalRequest request_of(const json& args, const Problem& p, const KernelSpec& kernel,
                                     const std::string& backend);

// Records `r` in the server's store, in the run `command` that this server process opened for
// the machine (the first call opens it); returns {path, run, evaluation}, or null when the
// server records nothing. A store that fails is reported in the result, never fatal.
json record(const ServerOptions& o, const std::string& command, const EvalRequest& req,
            const EvalResult& r);

// A result's text for a model: `summary`, then the structured JSON, compact.
[[nodiscard]] std::string text_of(const std::string& summary, const json& structured);

}  // namespace kforge::mcp
