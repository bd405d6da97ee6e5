// `kforge mcp`: serve kforge's tools to an MCP client (an agent framework, Claude Desktop, any
// client that starts a command) over stdin/stdout. docs/commands/mcp.md.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/store_options.hpp"
#include "kforge/error.hpp"
#include "mcp/server.hpp"

namespace kforge::cli {

void add_mcp(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand(
      "mcp", "serve kforge's tools to an MCP client on stdin/stdout (JSON-RPC 2.0)");
  struct Opts {
    std::string db;
    bool no_db = false, quiet = false;
    std::vector<std::string> problems;
    double timeout_s = 120, memory_gib = 8;
    int jobs = 4;
  };
  auto o = std::make_shared<Opts>();
  add_db_option(*cmd, o->db);
  cmd->add_flag("--no-db", o->no_db,
                "record nothing (history still reads the database if there is one)");
  cmd->add_option("--problems", o->problems,
                  "folders of problem files to serve beside the library's (repeatable)");
  cmd->add_option("--timeout", o->timeout_s, "seconds before a candidate's worker is killed")
      ->capture_default_str();
  cmd->add_option("--memory", o->memory_gib, "GiB of address space a candidate's worker may use")
      ->capture_default_str();
  cmd->add_option("--jobs,-j", o->jobs,
                  "calls that run kernels (evaluate, bench, tune, ceilings) at once; "
                  "more wait their turn")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet,-q", o->quiet, "no log lines on stderr");
  cmd->callback([o, &code] {
    if (isatty(0))
      fmt::print(stderr,
                 "kforge mcp: serving MCP on stdin/stdout; an MCP client starts this command "
                 "(docs/commands/mcp.md). Ctrl-D ends it.\n");
    mcp::ServerOptions so;
    so.db = store_path(o->db);
    so.record = !o->no_db;
    so.problem_dirs = o->problems;
    so.jobs = o->jobs;
    so.limits.timeout_s = o->timeout_s;
    so.limits.memory_bytes = static_cast<long long>(o->memory_gib * (1ll << 30));
    // The protocol owns the real stdout; anything else that prints there (a library warning, a
    // compiler) goes to stderr instead, so that no stray byte breaks a message.
    const int protocol_fd = dup(1);
    std::FILE* out = protocol_fd >= 0 ? fdopen(protocol_fd, "w") : nullptr;
    if (!out || dup2(2, 1) < 0)
      throw UsageError("kforge mcp: cannot set up stdout for the protocol");
    const bool quiet = o->quiet;
    code = mcp::serve(so, std::cin, out, [quiet](const std::string& line) {
      if (!quiet) fmt::print(stderr, "kforge mcp: {}\n", line);
    });
    std::fclose(out);
  });
}

}  // namespace kforge::cli
