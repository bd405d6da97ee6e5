#include "agent/proposer_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "kforge/agent.hpp"

namespace kforge::agent {

ProposerProcess::ProposerProcess(const std::string& command) {
  // A proposer that dies while kforge writes to it must become an error, not a SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw ProposerError(std::string("cannot create pipes for the proposer: ") + std::strerror(errno));
  pid_ = ::fork();
  if (pid_ < 0) throw ProposerError(std::string("cannot start the proposer: ") + std::strerror(errno));
  if (pid_ == 0) {
    ::signal(SIGPIPE, SIG_DFL);  // an ignored signal stays ignored across exec
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
}

ProposerProcess::~ProposerProcess() {
  if (to_child_ >= 0) ::close(to_child_);
  reap(2.0);
  if (!wait_status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    reap(5.0);
  }
  if (from_child_ >= 0) ::close(from_child_);
}

void ProposerProcess::reap(double wait_s) {
  if (wait_status_ || pid_ <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  do {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      wait_status_ = st;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
}

std::string ProposerProcess::status() {
  reap(0.5);
  if (!wait_status_) return "still running";
  const int st = *wait_status_;
  if (WIFEXITED(st)) return fmt::format("exit code {}", WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return fmt::format("killed by signal {} ({})", WTERMSIG(st), strsignal(WTERMSIG(st)));
  return "ended";
}

void ProposerProcess::send(const std::string& line) {
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(to_child_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw ProposerError("the proposer stopped reading its stdin (" + status() + ")");
    done += static_cast<std::size_t>(n);
  }
}

std::optional<std::string> ProposerProcess::receive(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      throw ProposerError(fmt::format("the proposer sent nothing for {:g} s (--proposer-timeout)", timeout_s));
    pollfd p{from_child_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (buffer_.empty()) return std::nullopt;
      std::string line;
      line.swap(buffer_);  // a last line without its newline
      return line;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace kforge::agent
