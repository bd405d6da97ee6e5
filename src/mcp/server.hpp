#pragma once
// `kforge mcp`: an MCP server on stdio (docs/commands/mcp.md). The lifecycle (initialize, the
// initialized notification, ping), tools/list and tools/call; each tool call runs on its own
// thread, so a long tuning run and further calls proceed together; notifications/progress for
// a call that sent a progressToken; notifications/cancelled stops a call (a tuning run at its
// next evaluation) and, as the specification asks, the cancelled request gets no response.
// Every other request is answered, whatever arrives: a line that is not JSON (-32700), a
// message that is not a request (-32600), an unknown method (-32601), bad params or an
// unknown tool (-32602); a tool's own failure is a result with isError.
#include <functional>
#include <istream>
#include <string>

#include "mcp/tools.hpp"

namespace kforge::mcp {

// Protocol revisions this server speaks, newest first; it answers an initialize asking for
// another with the newest, as the specification says.
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

// Serves until `in` ends; then answers the calls that end within 5 s, cancels the others and
// gives them 5 s more (an evaluation in flight finishes first) before it exits. Messages go to
// `out`, one per line; `log` gets a line per event that a human may want (stderr). Returns the exit
// code.
int serve(const ServerOptions& o, std::istream& in, std::FILE* out,
          const std::function<void(const std::string&)>& log);

}  // namespace kforge::mcp
