#include "problem/native_code.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/cpu_target.hpp"
#include "kforge/subprocess.hpp"
#include "kforge/util.hpp"

namespace kforge {

namespace {

// The compiler's first errors, not its whole page: what a user needs to fix the file.
std::string first_errors(const std::string& log, std::size_t lines = 12) {
  std::string out;
  std::size_t n = 0, pos = 0;
  while (pos < log.size() && n < lines) {
    const std::size_t end = log.find('\n', pos);
    out += log.substr(pos, end == std::string::npos ? std::string::npos : end - pos + 1);
    pos = end == std::string::npos ? log.size() : end + 1;
    ++n;
  }
  return out;
}

}  // namespace

NativeCode::NativeCode(std::string what, std::string source_path, std::string adapter,
                       std::vector<std::string> flags)
    : what_(std::move(what)), source_path_(std::move(source_path)), adapter_(std::move(adapter)),
      flags_(std::move(flags)) {}

NativeCode::~NativeCode() = default;  // the object stays loaded: its code may still be called

std::string NativeCode::compile() {
  std::lock_guard lock(mutex_);
  return compile_locked();
}

std::string NativeCode::compile_locked() {
  if (object_.empty()) {
    const std::string user = read_file(source_path_);
    // #line keeps the compiler's messages in the user's own file and line numbers.
    const std::string text = fmt::format("#line 1 \"{}\"\n{}\n#line 1 \"kforge-adapter\"\n{}", source_path_,
                                         user, adapter_);
    // Hidden symbols and section garbage collection: the object keeps only what its entry
    // point reaches, so the baseline's object (loaded beside the kernel) does not carry a
    // reference that shares its source file.
    std::vector<std::string> argv{cpu_compiler(), "-O2", "-std=c++20", "-fPIC", "-shared",
                                  "-fvisibility=hidden", "-ffunction-sections", "-fdata-sections",
                                  "-Wl,--gc-sections",
                                  "-I" + std::filesystem::path(source_path_).parent_path().string()};
    std::string key = text;
    for (const auto& a : argv) key += '\0' + a;
    for (const auto& f : flags_) key += '\0' + f;
    const auto dir = cache_dir("problem");
    const std::string stem = hex64(hash64(key));
    const auto so = dir / (stem + ".so");
    if (!std::filesystem::exists(so)) {
      const auto src = dir / (stem + ".cpp");
      write_file_atomic(src, text);
      const std::string tmp = so.string() + ".tmp." + std::to_string(::getpid());
      argv.insert(argv.end(), {"-o", tmp, src.string()});
      argv.insert(argv.end(), flags_.begin(), flags_.end());  // libraries after the source
      const ProcessResult r = run_process(argv, {}, {.timeout_s = 300});
      if (!r.ok()) {
        std::filesystem::remove(tmp);
        throw ProblemError(fmt::format("the {} {} does not compile ({}):\n{}", what_, source_path_,
                                       r.describe(), first_errors(r.err + r.out)));
      }
      std::filesystem::rename(tmp, so);
    }
    object_ = so.string();
  }
  return object_;
}

void* NativeCode::symbol(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (!handle_) {
    const std::string so = compile_locked();
    handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw ProblemError(fmt::format("the {} {} cannot be loaded: {}", what_, source_path_, dlerror()));
  }
  void* s = dlsym(handle_, name.c_str());
  if (!s) throw ProblemError(fmt::format("the {} {} exports no {}", what_, source_path_, name));
  return s;
}

void run_forked(const std::string& what, double timeout_s, const std::function<void()>& body) {
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) throw ProblemError(what + ": fork failed: " + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a parent killed on its own timeout takes this along
    int code = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", what.c_str(), e.what());
      code = 3;
    }
    std::fflush(nullptr);
    _exit(code);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  auto nap = std::chrono::microseconds(50);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) throw ProblemError(what + ": waitpid failed");
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw ProblemError(fmt::format("{} ran past its {:g} s limit and was killed (an endless loop, or "
                                     "sizes too large for it: raise \"timeout_s\" in the problem file)",
                                     what, timeout_s));
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(20000));
  }
  if (WIFSIGNALED(status))
    throw ProblemError(fmt::format("{} crashed: killed by signal {} ({})", what, WTERMSIG(status),
                                   strsignal(WTERMSIG(status))));
  if (WEXITSTATUS(status) != 0)
    throw ProblemError(fmt::format("{} failed: exit code {}", what, WEXITSTATUS(status)));
}

SharedDoubles::SharedDoubles(std::size_t n) : n_(n) {
  const std::size_t bytes = std::max<std::size_t>(1, n) * sizeof(double);
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<double*>(m);
}

SharedDoubles::~SharedDoubles() { munmap(data_, std::max<std::size_t>(1, n_) * sizeof(double)); }

}  // namespace kforge
