#pragma once
// A problem file's own C++ (its reference, its input-conditioning hook, its baseline), compiled
// with a generated adapter into a shared object (cached on disk by content hash), and a way to
// run the untrusted parts of it in a forked child so that a crash or a hang is the problem's
// fault, reported as such, and never the kernel's.
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace kforge {

class NativeCode {
 public:
  // `source_path`: the user's file; `adapter`: C++ appended to it that exports extern "C"
  // entry points; `flags`: extra compiler and linker words (-lopenblas, -I...).
  NativeCode(std::string what, std::string source_path, std::string adapter,
             std::vector<std::string> flags);
  ~NativeCode();
  NativeCode(const NativeCode&) = delete;
  NativeCode& operator=(const NativeCode&) = delete;
  // Compiles on first use and returns the exported symbol; throws ProblemError naming the file
  // with the compiler's first errors.
  [[nodiscard]] void* symbol(const std::string& name);
  // Compiles on first use and returns the shared object's path, without loading it here (the
  // native host loads it: native_host.hpp).
  [[nodiscard]] std::string compile();

 private:
  std::string what_, source_path_, adapter_;
  std::vector<std::string> flags_;
  [[nodiscard]] std::string compile_locked();
  std::string object_;  // the compiled shared object, once compiled
  void* handle_ = nullptr;
  std::mutex mutex_;  // one compile, whichever thread asks first
};

// Runs `body` in a forked child and waits up to `timeout_s`: a child that dies by a signal,
// exits early or runs past the limit throws ProblemError("<what> crashed: killed by SIGSEGV").
// What the child must hand back it writes into memory from shared_buffer().
void run_forked(const std::string& what, double timeout_s, const std::function<void()>& body);

// Memory a forked child writes and its parent reads (MAP_SHARED); unmapped on destruction.
class SharedDoubles {
 public:
  explicit SharedDoubles(std::size_t n);
  ~SharedDoubles();
  SharedDoubles(const SharedDoubles&) = delete;
  SharedDoubles& operator=(const SharedDoubles&) = delete;
  [[nodiscard]] double* data() { return data_; }
  [[nodiscard]] std::size_t size() const { return n_; }

 private:
  double* data_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace kforge
