#pragma once
// The sandbox of kforge-worker: a seccomp-BPF filter, installed on every thread of the worker
// after it has compiled and loaded the candidate kernel and before the kernel's first launch.
// From then on the process (the kernel, and kforge's own code beside it) cannot start a
// process, run a program, open or create a file, open a socket, trace or signal another
// process, nor reach the kernel's larger attack surfaces (io_uring, bpf, perf events, ...).
// A forbidden call raises SIGSYS; the worker's handler names the call on stderr and the
// process dies of SIGSYS, which evaluate_isolated reports as a crash of the kernel.
// docs/commands/eval.md ("Sandbox") says what this stops and what it cannot.
#include <string>

namespace kforge {

// Installs the filter on every thread of this process (irrevocable). Throws std::runtime_error
// when the kernel refuses it or the architecture is not supported (x86-64 and aarch64 are).
void enter_sandbox();

// Whether enter_sandbox succeeded in this process: code that would open a file (a cache)
// skips it then.
[[nodiscard]] bool sandboxed();

// The first line the SIGSYS handler writes on stderr, followed by the call's name, a space and
// its number in parentheses: "kforge-sandbox: forbidden system call socket (41)".
inline constexpr char kSandboxMarker[] = "kforge-sandbox: forbidden system call ";

// The message for a worker killed by SIGSYS, from its stderr: "the kernel made a forbidden
// system call: socket (sandbox: ...)".
[[nodiscard]] std::string sandbox_violation(const std::string& worker_stderr);

}  // namespace kforge
