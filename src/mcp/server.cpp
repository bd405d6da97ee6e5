#include "mcp/server.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "kforge/error.hpp"
#include "mcp/protocol.hpp"
#include "mcp/schema.hpp"
#include "mcp/slots.hpp"

namespace kforge::mcp {
namespace {

using Log = std::function<void(const std::string&)>;

// One tool call in flight.
struct Call {
  std::atomic<bool> cancelled{false};
  std::atomic<bool> done{false};
  std::thread thread;
};

class Server {
 public:
  Server(const ServerOptions& o, std::FILE* out, Log log)
      : options_(o), out_(out), log_(std::move(log)), slots_(o.jobs) {}

  void handle_line(const std::string& line) {
    const Incoming m = parse_message(line);
    switch (m.kind) {
      case Incoming::Kind::invalid:
        log(fmt::format("answered a bad message with error {}",
                        m.error["error"]["code"].get<int>()));
        out_.send(m.error);
        return;
      case Incoming::Kind::response:
        return;  // this server sends no requests; nothing awaits one
      case Incoming::Kind::notification:
        try {
          notify(m);
        } catch (const std::exception& e) {  // a notification gets no answer, even to say this
          log(fmt::format("ignored notification {}: {}", m.method, e.what()));
        }
        return;
      case Incoming::Kind::request:
        break;
    }
    try {
      request(m);
    } catch (const ProtocolError& e) {
      out_.send(error_response(m.id, e.code, e.what(), e.data));
    } catch (const std::exception& e) {  // a bug of ours: still an answer, and the server stays up
      out_.send(error_response(m.id, kInternalError, std::string("Internal error: ") + e.what()));
    }
    reap();
  }

  // stdin ended: calls that end within `grace_s` are still answered (a script that pipes its
  // requests in reads them); then the rest are cancelled and get `cancel_s` to stop. What still
  // runs is abandoned with the process (an evaluation in flight cannot be stopped halfway).
  int finish(double grace_s, double cancel_s) {
    if (wait_for_calls(grace_s)) return 0;
    {
      std::lock_guard lock(mutex_);
      log(fmt::format("input closed; cancelling {} call(s) still running after {:.0f} s",
                      calls_.size(), grace_s));
      for (auto& [id, call] : calls_) call->cancelled = true;
    }
    if (wait_for_calls(cancel_s)) return 0;
    log("input closed; abandoning the calls that did not stop");
    std::fflush(nullptr);
    std::_Exit(0);  // their threads still use this server: no destructor may run under them
  }

 private:
  void log(const std::string& line) const {
    if (log_) log_(line);
  }

  void request(const Incoming& m) {
    if (m.method == "ping") return out_.send(response(m.id, json::object()));
    if (m.method == "initialize") return out_.send(response(m.id, initialize(m.params)));
    if (m.method != "tools/list" && m.method != "tools/call")  // e.g. server/discover, prompts/list
      throw ProtocolError(kMethodNotFound,
                          "Method not found: " + m.method +
                              " (this server has tools only: tools/list, tools/call, ping)");
    if (!initialized_)
      throw ProtocolError(kInvalidRequest,
                          "Invalid Request: send initialize first (the MCP lifecycle)");
    if (m.method == "tools/call") return start_call(m);
    json list = json::array();
    for (const auto& t : tools()) list.push_back(t.listing());
    out_.send(response(m.id, {{"tools", list}}));
  }

  json initialize(const json& params) {
    if (!params.is_object() || !params.contains("protocolVersion") ||
        !params["protocolVersion"].is_string())
      throw ProtocolError(kInvalidParams,
                          "Invalid params: initialize needs params.protocolVersion (a string)");
    if (initialized_) throw ProtocolError(kInvalidRequest, "Invalid Request: already initialized");
    const std::string asked = params["protocolVersion"].get<std::string>();
    std::string version = kProtocolVersions[0];
    for (const char* v : kProtocolVersions)
      if (asked == v) version = v;
    initialized_ = true;
    const json client = params.value("clientInfo", json::object());
    auto field = [&](const char* key, const char* otherwise) {
      return client.is_object() && client.contains(key) && client[key].is_string()
                 ? client[key].get<std::string>()
                 : std::string(otherwise);
    };
    log(fmt::format("initialized by {} {} (protocol {})", field("name", "a client"),
                    field("version", ""), version));
    return {{"protocolVersion", version},
            {"capabilities", {{"tools", {{"listChanged", false}}}}},
            {"serverInfo",
             {{"name", "kforge"},
              {"title", "kforge: verify, measure and tune compute kernels"},
              {"version", KFORGE_VERSION}}},
            {"instructions",
             "kforge judges compute kernels. list_problems, then describe_problem for a problem's "
             "ABI and error "
             "bound; evaluate runs your kernel source through compile, thorough verification and "
             "(bench: true) "
             "timing, and returns feedback to act on; bench and tune work on the library's "
             "kernels; history "
             "reads the results store; ceilings gives the machine's roofs. tune is long: send a "
             "progressToken."}};
  }

  void notify(const Incoming& m) {
    if (m.method == "notifications/cancelled") {
      const json id = m.params.is_object() ? m.params.value("requestId", json()) : json();
      std::lock_guard lock(mutex_);
      if (auto it = calls_.find(id.dump()); it != calls_.end()) {
        it->second->cancelled = true;
        const json reason = m.params.value("reason", json());
        log(fmt::format("request {} cancelled ({})", id.dump(),
                        reason.is_string() ? reason.get<std::string>() : "no reason given"));
      }
      return;  // an id that is unknown or already answered: ignored, as the specification allows
    }
    // notifications/initialized and anything else: nothing to do.
  }

  void start_call(const Incoming& m) {
    const json& p = m.params;
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string())
      throw ProtocolError(kInvalidParams,
                          "Invalid params: tools/call needs params.name (a string)");
    const Tool* tool = find_tool(p["name"].get<std::string>());
    if (!tool) {
      json names = json::array();
      for (const auto& t : tools()) names.push_back(t.name);
      throw ProtocolError(kInvalidParams, "Unknown tool: " + p["name"].get<std::string>(),
                          {{"tools", names}});
    }
    if (p.contains("arguments") && !p["arguments"].is_object())
      throw ProtocolError(kInvalidParams, "Invalid params: params.arguments must be an object");
    json token;
    if (p.contains("_meta") && p["_meta"].is_object() && p["_meta"].contains("progressToken")) {
      token = p["_meta"]["progressToken"];
      if (!token.is_string() && !token.is_number_integer())
        throw ProtocolError(kInvalidParams,
                            "Invalid params: _meta.progressToken must be a string or an integer");
    }
    auto call = std::make_shared<Call>();
    {
      std::lock_guard lock(mutex_);
      if (calls_.count(m.id.dump()))
        throw ProtocolError(kInvalidRequest, "Invalid Request: id " + m.id.dump() +
                                                 " is still in use by a running call");
      calls_[m.id.dump()] = call;
    }
    const json args = p.value("arguments", json::object());
    call->thread = std::thread(
        [this, tool, args, token, id = m.id, call] { run_call(*tool, args, token, id, *call); });
  }

  // On the call's own thread: runs the tool, answers (unless cancelled), marks it done.
  void run_call(const Tool& tool, const json& args, const json& token, const json& id, Call& call) {
    const auto t0 = std::chrono::steady_clock::now();
    ToolResult result;
    try {
      result = invoke(tool, args, token, call);
    } catch (const std::exception& e) {
      result = {{{"error", e.what()}}, std::string(tool.name) + " failed: " + e.what(), true};
    } catch (...) {
      result = {{{"error", "an unknown exception"}},
                tool.name + " failed with an unknown exception",
                true};
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (call.cancelled) {
      log(fmt::format(
          "{} (request {}) stopped after cancellation in {:.1f} s; not answered, as MCP asks",
          tool.name, id.dump(), s));
    } else {
      json r = {{"content", json::array({{{"type", "text"}, {"text", result.text}}})},
                {"structuredContent", result.structured},
                {"isError", result.is_error}};
      out_.send(response(id, std::move(r)));
      log(fmt::format("{} (request {}) answered in {:.1f} s{}", tool.name, id.dump(), s,
                      result.is_error ? " with a tool error" : ""));
    }
    call.done = true;
  }

  ToolResult invoke(const Tool& tool, const json& args, const json& token, Call& call) {
    if (auto bad = schema_violation(tool.input_schema, args)) {
      return {{{"error", "invalid arguments: " + *bad}, {"input_schema", tool.input_schema}},
              "invalid arguments: " + *bad + " (tools/list gives the tool's inputSchema)",
              true};
    }
    if (!tool.read_only) {
      if (!slots_.acquire(call.cancelled))
        return {{{"error", "cancelled while waiting"}}, "cancelled", true};
    }
    struct Release {
      Slots* s;
      ~Release() {
        if (s) s->release();
      }
    } release{tool.read_only ? nullptr : &slots_};
    ToolCall c;
    c.args = args;
    c.options = &options_;
    c.cancelled = &call.cancelled;
    auto last = std::make_shared<double>(-1);
    c.progress = [this, token, last, &call](double progress, double total,
                                            const std::string& message) {
      if (token.is_null() || call.cancelled || progress <= *last) return;  // progress must grow
      *last = progress;
      json params = {{"progressToken", token}, {"progress", progress}, {"message", message}};
      if (total > 0) params["total"] = total;
      out_.send(notification("notifications/progress", std::move(params)));
    };
    return tool.run(c);
  }

  // Whether every call ended within `seconds`.
  bool wait_for_calls(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (true) {
      reap();
      {
        std::lock_guard lock(mutex_);
        if (calls_.empty()) return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Joins the threads of calls that ended.
  void reap() {
    std::vector<std::shared_ptr<Call>> ended;
    {
      std::lock_guard lock(mutex_);
      for (auto it = calls_.begin(); it != calls_.end();) {
        if (it->second->done) {
          ended.push_back(it->second);
          it = calls_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& c : ended)
      if (c->thread.joinable()) c->thread.join();
  }

  const ServerOptions& options_;
  Output out_;
  Log log_;
  Slots slots_;
  bool initialized_ = false;  // only the reader thread touches it
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Call>> calls_;  // by the request id's JSON text
};

}  // namespace

int serve(const ServerOptions& o, std::istream& in, std::FILE* out, const Log& log) {
  Server server(o, out, log);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines carry nothing
    server.handle_line(line);
  }
  return server.finish(5, 5);
}

}  // namespace kforge::mcp
