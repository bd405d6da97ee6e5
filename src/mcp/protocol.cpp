#include "mcp/protocol.hpp"

namespace kforge::mcp {
namespace {

Incoming invalid(const json& id, int code, const std::string& message) {
  Incoming m;
  m.kind = Incoming::Kind::invalid;
  m.id = id;
  m.error = error_response(id, code, message);
  return m;
}

}  // namespace

Incoming parse_message(const std::string& line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    return invalid(nullptr, kParseError,
                   std::string("Parse error: the line is not JSON (") + e.what() + ")");
  }
  if (!j.is_object())
    return invalid(nullptr, kInvalidRequest,
                   j.is_array()
                       ? "Invalid Request: batches are not part of MCP; send one message per line"
                       : "Invalid Request: a message is a JSON object");
  // The id as far as it can be read, so that the error reaches the request it belongs to.
  json id = nullptr;
  if (j.contains("id") && (j["id"].is_string() || j["id"].is_number_integer())) id = j["id"];
  if (j.value("jsonrpc", json()) != "2.0")
    return invalid(id, kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  if (!j.contains("method")) {
    if (j.contains("result") || j.contains("error")) {  // a response to a request of ours
      Incoming m;
      m.kind = Incoming::Kind::response;
      m.id = id;
      return m;
    }
    return invalid(id, kInvalidRequest, "Invalid Request: no \"method\"");
  }
  if (!j["method"].is_string())
    return invalid(id, kInvalidRequest, "Invalid Request: \"method\" must be a string");
  if (j.contains("id") && id.is_null())
    return invalid(nullptr, kInvalidRequest,
                   "Invalid Request: \"id\" must be a string or an integer");
  if (j.contains("params") && !j["params"].is_object())
    return invalid(id, kInvalidRequest, "Invalid Request: \"params\" must be an object");
  Incoming m;
  m.kind = j.contains("id") ? Incoming::Kind::request : Incoming::Kind::notification;
  m.id = id;
  m.method = j["method"].get<std::string>();
  m.params = j.contains("params") ? j["params"] : json();
  return m;
}

json response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json error_response(const json& id, int code, const std::string& message, const json& data) {
  json e = {{"code", code}, {"message", message}};
  if (!data.is_null()) e["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(e)}};
}

json notification(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

void Output::send(const json& message) {
  // Invalid UTF-8 (a compiler log quoting a stray byte) is replaced, never a reason to throw.
  const std::string text = message.dump(-1, ' ', false, json::error_handler_t::replace);
  std::lock_guard lock(mutex_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

}  // namespace kforge::mcp
