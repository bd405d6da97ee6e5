// The MCP server's pieces without a client: JSON-RPC classification of a line, the argument
// checker, every tool's schema, and the server loop on a string of requests (what the Python
// SDK test cannot send: garbage, batches, ids of the wrong type, requests before initialize).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "mcp/protocol.hpp"
#include "mcp/schema.hpp"
#include "mcp/server.hpp"
#include "mcp/tools.hpp"

namespace kforge::mcp {
namespace {

TEST(McpProtocol, ClassifiesLines) {
  EXPECT_EQ(parse_message("{not json").error["error"]["code"], kParseError);
  EXPECT_TRUE(parse_message("{not json").error["id"].is_null());
  EXPECT_EQ(parse_message("[]").error["error"]["code"], kInvalidRequest);
  EXPECT_EQ(parse_message("42").error["error"]["code"], kInvalidRequest);
  const auto v1 = parse_message(R"({"jsonrpc":"1.0","id":7,"method":"ping"})");
  EXPECT_EQ(v1.kind, Incoming::Kind::invalid);
  EXPECT_EQ(v1.error["id"], 7) << "the error reaches the request it belongs to";
  EXPECT_EQ(parse_message(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})").error["error"]["code"],
            kInvalidRequest);
  EXPECT_EQ(
      parse_message(R"({"jsonrpc":"2.0","id":1,"method":"x","params":[1]})").error["error"]["code"],
      kInvalidRequest);
  const auto req = parse_message(R"({"jsonrpc":"2.0","id":"a","method":"tools/list"})");
  EXPECT_EQ(req.kind, Incoming::Kind::request);
  EXPECT_EQ(req.id, "a");
  EXPECT_EQ(parse_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").kind,
            Incoming::Kind::notification);
  EXPECT_EQ(parse_message(R"({"jsonrpc":"2.0","id":3,"result":{}})").kind,
            Incoming::Kind::response);
}

TEST(McpSchema, NamesTheBadArgument) {
  const json schema = {
      {"type", "object"},
      {"properties",
       {{"n", {{"type", "integer"}, {"minimum", 1}}},
        {"m", {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}}},
        {"s", {{"type", "string"}, {"enum", {"a", "b"}}}}}},
      {"required", {"n"}},
      {"additionalProperties", false}};
  EXPECT_FALSE(schema_violation(schema, {{"n", 3}, {"m", {{"M", 64}}}, {"s", "a"}}));
  EXPECT_FALSE(schema_violation(schema, {{"n", 3.0}})) << "3.0 is an integer in JSON Schema";
  EXPECT_EQ(*schema_violation(schema, json::object()), "arguments: \"n\" is required");
  EXPECT_NE(schema_violation(schema, {{"n", 0}})->find("minimum"), std::string::npos);
  EXPECT_NE(schema_violation(schema, {{"n", 1.5}})->find("arguments.n: expected integer"),
            std::string::npos);
  EXPECT_NE(schema_violation(schema, {{"n", 1}, {"m", {{"M", "x"}}}})->find("arguments.m.M"),
            std::string::npos);
  EXPECT_NE(schema_violation(schema, {{"n", 1}, {"s", "c"}})->find("not one of"),
            std::string::npos);
  EXPECT_NE(schema_violation(schema, {{"n", 1}, {"zz", 1}})->find("unknown property \"zz\""),
            std::string::npos);
}

TEST(McpTools, EachHasAnObjectSchemaAndADescription) {
  EXPECT_EQ(tools().size(), 7u);
  for (const auto& t : tools()) {
    EXPECT_EQ(t.input_schema["type"], "object") << t.name;
    EXPECT_FALSE(t.description.empty()) << t.name;
    EXPECT_EQ(find_tool(t.name), &t);
    // A schema that accepts no arguments at all would be useless; required ones are listed.
    for (const auto& r : t.input_schema["required"])
      EXPECT_TRUE(t.input_schema["properties"].contains(r)) << t.name;
  }
  EXPECT_EQ(find_tool("nope"), nullptr);
}

// The server loop on `input`; returns its output lines as JSON.
std::vector<json> serve_lines(const std::string& input) {
  std::istringstream in(input);
  std::FILE* out = std::tmpfile();
  ServerOptions o;
  o.record = false;
  EXPECT_EQ(serve(o, in, out, {}), 0);
  std::rewind(out);
  std::vector<json> lines;
  char buf[1 << 16];
  while (std::fgets(buf, sizeof buf, out)) lines.push_back(json::parse(buf));
  std::fclose(out);
  return lines;
}

TEST(McpServer, AnswersEveryRequestAndOnlyRequests) {
  const auto out = serve_lines(
      "garbage\n"
      R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"
      "\n"  // before initialize
      R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01","clientInfo":{"name":5}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}})"
      "\n"
      "\n"
      R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})"
      "\n"
      R"({"jsonrpc":"2.0","id":4,"method":"prompts/list"})"
      "\n"
      R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}})"
      "\n"
      R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"describe_problem","arguments":{}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"describe_problem","arguments":[]}})"
      "\n"
      R"({"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})"
      "\n");
  ASSERT_EQ(out.size(), 9u) << "one answer per request, none for notifications or blank lines";
  std::map<std::string, json> by_id;
  for (const auto& m : out) by_id[m["id"].dump()] = m;
  EXPECT_EQ(by_id["null"]["error"]["code"], kParseError);
  EXPECT_EQ(by_id["1"]["error"]["code"], kInvalidRequest) << "initialize comes first";
  EXPECT_EQ(by_id["2"]["result"]["protocolVersion"], kProtocolVersions[0])
      << "an unknown version: our newest";
  EXPECT_EQ(by_id["3"]["result"]["tools"].size(), 7u);
  EXPECT_EQ(by_id["4"]["error"]["code"], kMethodNotFound);
  EXPECT_EQ(by_id["5"]["error"]["code"], kInvalidParams);
  EXPECT_TRUE(by_id["6"]["result"]["isError"])
      << "a missing argument is the tool's error, for the model to fix";
  EXPECT_NE(
      by_id["6"]["result"]["content"][0]["text"].get<std::string>().find("\"problem\" is required"),
      std::string::npos);
  EXPECT_EQ(by_id["7"]["error"]["code"], kInvalidParams);
  EXPECT_EQ(by_id["8"]["error"]["code"], kInvalidRequest) << "initialize once";
}

}  // namespace
}  // namespace kforge::mcp
