#pragma once
// Errors as exceptions; the command line turns each kind into an exit code.
#include <stdexcept>
#include <string>

namespace kforge {

// Bad usage or input (a malformed spec, an unknown name): exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A problem that cannot be judged with: a problem file that is malformed, or whose reference
// does not compile, crashes or hangs. The problem's fault, never the kernel's: exit code 2.
struct ProblemError : UsageError {
  using UsageError::UsageError;
};

// A source that did not compile; `log` holds the compiler's own words.
struct CompileError : std::runtime_error {
  CompileError(const std::string& what, std::string log)
      : std::runtime_error(what), log(std::move(log)) {}
  std::string log;
};

// A launch that the backend refused or that failed on the device.
struct LaunchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The backend exists in this build but cannot run here (no device, no driver).
struct NotSupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace kforge
