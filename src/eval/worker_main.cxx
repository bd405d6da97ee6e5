// kforge-worker: evaluates one request (JSON on stdin) and prints the result (JSON on stdout).
// It exists so that an untrusted kernel can only ever crash this process, never its caller.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>

#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/sandbox.hpp"
#include "kforge/util.hpp"
#include "problem/native_host.hpp"
#include "verify/progress.hpp"

namespace {

// The race worker (src/eval/tsan_probe.cpp) runs with ThreadSanitizer's runtime preloaded. To
// name the modules in a report it reads /proc/self/maps, which the sandbox forbids; asked once
// for a module now, with the kernel loaded, it keeps the list (until the next dlopen: none).
void fill_tsan_module_list() {
  using Lookup = int (*)(void* pc, char* module, std::size_t size, void** offset);
  const auto lookup = reinterpret_cast<Lookup>(dlsym(RTLD_DEFAULT, "__sanitizer_get_module_and_offset_for_pc"));
  if (!lookup) return;
  char module[256];
  void* offset = nullptr;
  (void)lookup(reinterpret_cast<void*>(&fill_tsan_module_list), module, sizeof module, &offset);
}

}  // namespace

// `kforge-worker --no-sandbox` (kforge eval --no-sandbox) or KFORGE_NO_SANDBOX=1 runs the kernel
// without the seccomp filter, for debugging a kernel that the sandbox stops.
int main(int argc, char** argv) {
  // The problem file's native host (problem/native_host.hpp), started by a worker.
  if (argc > 1 && std::strcmp(argv[1], "--native-host") == 0) return kforge::serve_native_host(argc - 2, argv + 2);
  bool sandbox = true;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--no-sandbox") == 0) sandbox = false;
  if (const char* e = std::getenv("KFORGE_NO_SANDBOX"); e && *e && std::strcmp(e, "0") != 0) sandbox = false;
  kforge::keep_freed_memory();
  // The kernel may print; keep fd 1 for the result alone by moving its stdout to stderr.
  const int result_fd = dup(1);
  dup2(2, 1);
  // Each verification run is named on stderr first: a crash or a hang is then reported with
  // the trial and shape it happened in (isolate.cpp).
  kforge::set_verify_progress([](const std::string& where) {
    const std::string line = std::string(kforge::kProgressMarker) + where + "\n";
    if (write(2, line.data(), line.size()) < 0) return;  // nothing to do about a closed stderr
  });
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  nlohmann::json out;
  int code = 0;
  try {
    auto req = kforge::EvalRequest::from_json(nlohmann::json::parse(input));
    // The race worker (VerifyOptions::tsan) is started by this worker's parent after a pass
    // (isolate.cpp): this process is sandboxed and could not start it.
    req.verify.tsan = false;
    // OpenCL on PoCL runs on the host CPU, and OpenCL C there takes inline assembly: a kernel can
    // make any system call (tests/data/hostile/asm_*.cl), so it is filtered as cpu code is. Two
    // things PoCL would do at a kernel's first launch must happen before: compile and link a
    // work-group function specialized to the launch's local size (it forks its linker), which
    // POCL_WORK_GROUP_SPECIALIZATION=0 replaces by the generic one built with the program
    // (read when the platform opens; bench/sandbox_overhead.py measures the cost), and open the
    // kernel's compiled code, which load_before_launch moves to compile time. Other vendors'
    // drivers ignore both.
    auto options = req.backend_options;
    if (sandbox && req.backend == "opencl") {
      setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 1);
      options.load_before_launch = true;
    }
    auto backend = kforge::make_backend(req.backend, options);
    // The filter goes on once the kernel is compiled and loaded and everything kforge's own code
    // needs from outside the process is at hand (evaluate's before_first_launch), before the
    // kernel first runs. A problem file's reference runs in the native host started before it.
    // Not for cuda: device code makes no host system call, and what the CUDA driver does at a
    // launch could not be tried here (no GPU).
    std::function<void()> enter;
    if (sandbox && (req.backend == "cpu" || req.backend == "opencl"))
      enter = [tsan = req.backend_options.tsan] {
        if (tsan) fill_tsan_module_list();
        kforge::enter_sandbox();
      };
    out = kforge::evaluate(req, *backend, enter).to_json();
  } catch (const kforge::ProblemError& e) {
    out = {{"problem_error", e.what()}};  // the problem's fault: the caller exits 2, not "crashed"
  } catch (const kforge::UsageError& e) {
    out = {{"usage_error", e.what()}};  // a refused request (a degenerate instance): exit 2 too
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kforge-worker: %s\n", e.what());
    code = 3;
  }
  if (code == 0) {
    const std::string text = out.dump();
    if (write(result_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) code = 4;
  }
  std::fflush(nullptr);
  _exit(code);  // skip static destructors a broken kernel may have corrupted
}
