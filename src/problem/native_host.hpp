#pragma once
// A problem file's own code (its reference and its input-conditioning hook) held by a process of
// its own, started by the worker before the sandbox goes on. The worker then never maps that
// code: a candidate kernel in the worker cannot find the reference and call it for its answer,
// and the sandboxed worker needs no fork (docs/commands/eval.md, "sandbox"). The host runs each
// call in a forked child of its own, as run_forked does, so a crash or a hang of the file's code
// is still reported as the problem's fault. Buffers travel through one memfd both processes map;
// requests and replies through two pipes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

// The native entry points of a problem file and their C signatures (file_problem.cpp's adapters).
enum class NativeEntry : std::uint32_t {
  reference = 0,  // void(double* const* t, const long long* sizes, const double* scalars)
  condition = 1,  // void(double* const* t, const long long* sizes, unsigned long long seed, int trial)
};

struct NativeArgs {
  std::vector<long long> sizes;
  std::vector<double> scalars;
  std::uint64_t seed = 0;
  int trial = 0;
};

// One array the entry point receives; `write_back`: copy what the code leaves in it back.
struct NativeBuffer {
  double* data = nullptr;
  std::size_t size = 0;
  bool write_back = false;
};

// Calls `fn` (an entry point of kind `e`) on `buffers`: the one place that knows the signatures.
void invoke_native(NativeEntry e, void* fn, double* const* buffers, const NativeArgs& a);

class NativeHost {
 public:
  // Starts the host: `program` run as `program --native-host OBJECT SYMBOL ...`, one pair per
  // entry (NativeEntry order; an empty object for an entry the file does not have). Throws
  // ProblemError when it cannot start.
  NativeHost(const std::string& program, const std::vector<std::pair<std::string, std::string>>& entries);
  ~NativeHost();  // closes the request pipe: the host exits
  NativeHost(const NativeHost&) = delete;
  NativeHost& operator=(const NativeHost&) = delete;

  // Runs entry `e` in the host on `buffers` (all copied in, those marked copied back); throws
  // ProblemError("<what> crashed: ...") as run_forked does.
  void call(NativeEntry e, const std::string& what, double timeout_s, std::vector<NativeBuffer>& buffers,
            const NativeArgs& a);

 private:
  void shut();  // closes the pipes and waits for the host
  int request_fd_ = -1, reply_fd_ = -1, memory_fd_ = -1;
  int pid_ = -1;
};

// The host's side: `argv` after "--native-host"; serves requests until the worker closes the
// pipe, then returns the process's exit code.
int serve_native_host(int argc, char** argv);

// The program that serves `--native-host`: the worker itself (/proc/self/exe).
[[nodiscard]] std::string native_host_program();

}  // namespace kforge
