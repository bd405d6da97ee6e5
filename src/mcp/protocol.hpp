#pragma once
// JSON-RPC 2.0 as MCP uses it on stdio: one message per line (UTF-8 JSON, no embedded newline),
// requests carry an id and get exactly one response, notifications carry none and get none.
// Batches are not part of MCP (removed in 2025-06-18), so an array is an invalid request.
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace kforge::mcp {

using nlohmann::json;

// JSON-RPC's error codes for protocol-level failures.
inline constexpr int kParseError = -32700;      // the line is not JSON
inline constexpr int kInvalidRequest = -32600;  // JSON, but not a request or notification
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;  // e.g. an unknown tool, params not an object
inline constexpr int kInternalError = -32603;

// A protocol-level failure of one request: answered as a JSON-RPC error, never a crash.
struct ProtocolError : std::runtime_error {
  ProtocolError(int code, const std::string& message, json data = nullptr)
      : std::runtime_error(message), code(code), data(std::move(data)) {}
  int code;
  json data;
};

struct Incoming {
  enum class Kind { request, notification, response, invalid };
  Kind kind = Kind::invalid;
  json id;  // requests: a string or an integer; null when it could not be read
  std::string method;
  json params;  // an object, or null when absent
  json error;   // invalid: the error response to send (already built)
};

// Classifies one line. Never throws: a line that is not JSON or not a JSON-RPC message becomes
// an `invalid` with the -32700 or -32600 response to send.
[[nodiscard]] Incoming parse_message(const std::string& line);

[[nodiscard]] json response(const json& id, json result);
[[nodiscard]] json error_response(const json& id, int code, const std::string& message,
                                  const json& data = nullptr);
[[nodiscard]] json notification(const std::string& method, json params);

// The server's side of stdout: one message per line, whole lines only, from any thread.
class Output {
 public:
  explicit Output(std::FILE* out) : out_(out) {}
  void send(const json& message);

 private:
  std::mutex mutex_;
  std::FILE* out_;
};

}  // namespace kforge::mcp
