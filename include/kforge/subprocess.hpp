#pragma once
// Runs a child process with its own time and memory limits: a crash or a hang of the child
// becomes a result, never the end of the caller.
#include <string>
#include <vector>

namespace kforge {

struct ProcessLimits {
  double timeout_s = 0;         // wall clock; 0 means none. The child is SIGKILLed past it.
  long long memory_bytes = 0;   // address-space limit (RLIMIT_AS); 0 means none
  // Where larger: the hard limit, which the child may raise its own limit to for a run that
  // needs it (verification's index_width run) and lower again; the soft limit stays
  // memory_bytes for everything else.
  long long memory_hard_bytes = 0;
};

struct ProcessResult {
  int exit_code = -1;   // valid when signal == 0 and !timed_out
  int signal = 0;       // the signal that ended the child, if any
  bool timed_out = false;
  std::string out, err;
  [[nodiscard]] bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
  [[nodiscard]] std::string describe() const;  // "exit code 3", "killed by SIGSEGV", ...
};

// Runs argv[0] (searched in PATH) with `input` on its stdin.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input = {},
                          const ProcessLimits& limits = {});

// Processes started to serve this one for as long as it lives (a problem's Python bridge): the
// worker's sandbox lets it signal these, and no other process but itself, so that a bridge
// past its time limit can still be killed.
void register_helper_process(int pid);
[[nodiscard]] std::vector<int> helper_processes();

}  // namespace kforge
