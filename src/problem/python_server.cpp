// The pipe protocol of python_server.hpp. The bridge script is embedded in kforge and written
// once into the cache (by the hash of its text), so the binary runs from anywhere.
#include "problem/python_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/subprocess.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

std::string bridge_script() {
  static const std::string path = [] {
    const std::string& text = embedded_file("python/kforge_kernelbench.py");
    const auto p = cache_dir("python") / ("kforge_kernelbench_" + hex64(hash64(text)) + ".py");
    if (!std::filesystem::exists(p)) write_file_atomic(p, text);
    return p.string();
  }();
  return path;
}

void write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw std::runtime_error(std::string("write: ") + std::strerror(errno));
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

std::string python_interpreter() {
  if (const char* e = std::getenv("KFORGE_PYTHON"); e && *e) return e;
  if (::access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

double kernelbench_timeout_s() {
  if (const char* e = std::getenv("KFORGE_KB_TIMEOUT_S"); e && *e) {
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (end && *end == '\0' && v > 0) return v;
    throw UsageError(fmt::format("KFORGE_KB_TIMEOUT_S='{}' is not a positive number of seconds", e));
  }
  return 600;
}

PythonServer::PythonServer(std::string what, std::string problem_path)
    : what_(std::move(what)), path_(std::move(problem_path)) {}

PythonServer::~PythonServer() { stop(); }

void PythonServer::start() {
  const std::string script = bridge_script();
  const std::string stderr_path =
      (cache_dir("python") / fmt::format("stderr.{}.{}", ::getpid(), hex64(hash64(path_)))).string();
  stderr_fd_ = ::open(stderr_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (stderr_fd_ >= 0) ::unlink(stderr_path.c_str());
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
    throw ProblemError(what_ + ": pipe failed: " + std::strerror(errno));
  const std::string python = python_interpreter();
  std::vector<std::string> argv{python, script, "serve", path_};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw ProblemError(what_ + ": fork failed: " + std::strerror(errno));
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    if (stderr_fd_ >= 0) dup2(stderr_fd_, 2);
    execvp(args[0], args.data());
    const char msg[] = "kforge: cannot run the Python interpreter (set KFORGE_PYTHON)\n";
    (void)!::write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  register_helper_process(pid);  // a sandboxed worker may still kill it past its limit
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  buffered_.clear();
}

void PythonServer::stop() {
  if (pid_ > 0) {
    ::close(to_child_);
    ::close(from_child_);
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
  pid_ = to_child_ = from_child_ = stderr_fd_ = -1;
}

std::string PythonServer::stderr_tail() const {
  std::string text;
  if (stderr_fd_ < 0) return text;
  char buf[65536];
  off_t at = 0;
  for (ssize_t n; (n = ::pread(stderr_fd_, buf, sizeof buf, at)) > 0; at += n) text.append(buf, static_cast<std::size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > 1500) text = "..." + text.substr(text.size() - 1500);
  return text;
}

void PythonServer::fail(const std::string& why) {
  const std::string tail = stderr_tail();
  stop();
  throw ProblemError(fmt::format("{}: {}{}", what_, why, tail.empty() ? "" : "\n" + tail));
}

PythonReply PythonServer::call(nlohmann::json request, const std::vector<const std::vector<double>*>& tensors,
                               double timeout_s) {
  std::lock_guard lock(mutex_);
  if (pid_ < 0) start();
  request["counts"] = nlohmann::json::array();
  for (const auto* t : tensors) request["counts"].push_back(t->size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  // The request goes out whole before the reply is read: the bridge reads every byte of a
  // request before it answers, so neither side waits on the other.
  signal(SIGPIPE, SIG_IGN);
  try {
    const std::string line = request.dump() + "\n";
    write_all(to_child_, line.data(), line.size());
    for (const auto* t : tensors)
      write_all(to_child_, reinterpret_cast<const char*>(t->data()), t->size() * sizeof(double));
  } catch (const std::exception&) {
    fail(fmt::format("the Python bridge ({}) exited before it read the request", python_interpreter()));
  }
  // Reads until `need` bytes are buffered, or the deadline.
  auto fill = [&](std::size_t need) {
    char chunk[1 << 16];
    while (buffered_.size() < need) {
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0)
        fail(fmt::format("its reference ran past its {:g} s limit and was killed (an endless loop, or sizes too "
                         "large: choose smaller ones with --size, or raise KFORGE_KB_TIMEOUT_S)", timeout_s));
      pollfd p{from_child_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min(left * 1000 + 1, 1000.0)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) continue;
      const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int status = 0;
        ::close(to_child_);
        ::close(from_child_);
        ::waitpid(pid_, &status, 0);  // its stdout closed: it is exiting
        pid_ = to_child_ = from_child_ = -1;
        const std::string how = WIFSIGNALED(status)
            ? fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)))
            : fmt::format("exited with code {}", WEXITSTATUS(status));
        fail(fmt::format("the Python bridge {} (is torch installed for {}? see docs/kernelbench.md)", how,
                         python_interpreter()));
      }
      buffered_.append(chunk, static_cast<std::size_t>(n));
    }
  };
  std::size_t eol;
  for (;;) {
    eol = buffered_.find('\n');
    if (eol != std::string::npos) break;
    fill(buffered_.size() + 1);
  }
  PythonReply reply;
  try {
    reply.header = nlohmann::json::parse(buffered_.substr(0, eol));
  } catch (const nlohmann::json::exception&) {
    fail("the Python bridge answered something that is not JSON: " + buffered_.substr(0, std::min<std::size_t>(eol, 200)));
  }
  buffered_.erase(0, eol + 1);
  if (!reply.header.value("ok", false)) {
    const std::string error = reply.header.value("error", std::string("no reason given"));
    throw ProblemError(fmt::format("{}: {}", what_, error));
  }
  for (const auto& c : reply.header.at("counts")) {
    const std::size_t n = c.get<std::size_t>();
    fill(n * sizeof(double));
    reply.tensors.emplace_back(n);
    std::memcpy(reply.tensors.back().data(), buffered_.data(), n * sizeof(double));
    buffered_.erase(0, n * sizeof(double));
  }
  return reply;
}

}  // namespace kforge
