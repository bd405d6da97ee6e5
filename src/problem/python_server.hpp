#pragma once
// A Python process kforge keeps for one KernelBench problem file (python/kforge_kernelbench.py
// `serve FILE`): requests and replies are one JSON line each, followed by raw little-endian
// doubles, over a pair of pipes. A reply that does not come within its time limit, a process
// that dies, or a reply {"ok": false} is the problem's fault: ProblemError naming the file.
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

struct PythonReply {
  nlohmann::json header;
  std::vector<std::vector<double>> tensors;  // as many as header["counts"] announces
};

class PythonServer {
 public:
  // `what` names the problem in messages ("KernelBench problem /x/19_ReLU.py").
  PythonServer(std::string what, std::string problem_path);
  ~PythonServer();
  PythonServer(const PythonServer&) = delete;
  PythonServer& operator=(const PythonServer&) = delete;

  // Sends `request` (its "counts" filled from `tensors`) and waits up to `timeout_s` for the
  // reply. Starts the process on first use (and again after it was killed).
  PythonReply call(nlohmann::json request, const std::vector<const std::vector<double>*>& tensors,
                   double timeout_s);

 private:
  void start();
  void stop();
  [[nodiscard]] std::string stderr_tail() const;
  [[noreturn]] void fail(const std::string& why);

  std::string what_, path_;
  std::mutex mutex_;
  // The child's stderr: an unlinked file this process keeps open, so that its last lines can be
  // read after the child fails even where opening files is no longer allowed (the sandbox).
  int pid_ = -1, to_child_ = -1, from_child_ = -1, stderr_fd_ = -1;
  std::string buffered_;  // bytes read past the last reply's end
};

// The interpreter that runs the bridge: $KFORGE_PYTHON, else /usr/bin/python3 (where Debian's
// python3-torch lives), else python3 from PATH.
[[nodiscard]] std::string python_interpreter();

// Seconds a KernelBench reference may take per request: $KFORGE_KB_TIMEOUT_S, default 600.
[[nodiscard]] double kernelbench_timeout_s();

}  // namespace kforge
