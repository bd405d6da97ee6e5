#pragma once
// The proposer as a child process: `/bin/sh -c COMMAND` with pipes on its stdin and stdout (its
// stderr is ours, so what it logs reaches the user). Lines in, lines out, each with a timeout.
#include <sys/types.h>

#include <optional>
#include <string>

namespace kforge::agent {

class ProposerProcess {
 public:
  explicit ProposerProcess(const std::string& command);  // throws ProposerError
  ~ProposerProcess();  // closes its stdin, waits briefly, then kills it
  ProposerProcess(const ProposerProcess&) = delete;
  ProposerProcess& operator=(const ProposerProcess&) = delete;

  // Writes one line (a newline is added). Throws ProposerError when the proposer is gone.
  void send(const std::string& line);
  // The next line, or nothing at end of file; throws ProposerError past `timeout_s`.
  [[nodiscard]] std::optional<std::string> receive(double timeout_s);
  // "exit code 3", "killed by SIGSEGV" or "still running", for messages.
  [[nodiscard]] std::string status();

 private:
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string buffer_;
  std::optional<int> wait_status_;
  void reap(double wait_s);
};

}  // namespace kforge::agent
