// KernelBench's check (kforge/kernelbench.hpp): the kernel on KernelBench's own inputs, compared
// with its tolerance. It runs in a forked child that makes its own backend (no thread of the
// parent's is needed there) and hands its figures back through shared memory.
#include "kforge/kernelbench.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "eval/runner.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"

namespace kforge {
namespace {

// What the child writes back.
struct Shared {
  int status = 0;  // 0 passed, 1 incorrect, 2 compile_error, 3 crashed (a thrown error)
  int trials_passed = 0;
  double max_abs_diff = 0;
  double time_s = 0;
  char detail[2048] = {};
};

void set_detail(Shared& s, const std::string& text) {
  std::strncpy(s.detail, text.c_str(), sizeof s.detail - 1);
}

void run_trials(Shared& out, const Problem& p, const KernelSpec& k, const std::string& backend_name,
                const std::vector<KbTrial>& trials, double atol, double rtol, int timed_runs) {
  auto backend = make_backend(backend_name);
  const ParamValues params = k.resolve({});
  Defines defines;
  for (const auto& [n, v] : params) defines.emplace_back(n, std::to_string(v));
  defines.emplace_back("KF_DTYPE_FP32", "1");
  std::shared_ptr<Module> module;
  try {
    module = backend->compile(k.source, k.entry, defines, k.source_path);
  } catch (const CompileError& e) {
    out.status = 2;
    set_detail(out, std::string(e.what()) + "\n" + e.log);
    return;
  }
  bool all = true;
  std::string first_failure;
  for (std::size_t trial = 0; trial < trials.size(); ++trial) {
    const KbTrial& t = trials[trial];
    KernelRunner runner(*backend, *module, p, k.geometry(params, t.inst.sizes));
    runner.load(t.inst, true);
    runner.launch();
    const KernelOutput got = runner.outputs();
    bool ok = true;
    std::int64_t bad = 0;
    for (std::size_t o = 0; o < t.expected.size(); ++o)
      for (std::size_t i = 0; i < t.expected[o].size(); ++i) {
        // torch.allclose(expected, got): |expected - got| <= atol + rtol * |got|, NaN never close.
        const double e = t.expected[o][i], g = got.tensors[o][i];
        const double diff = std::fabs(e - g);
        if (std::isfinite(diff)) out.max_abs_diff = std::max(out.max_abs_diff, diff);
        if (!(diff <= atol + rtol * std::fabs(g)) && !(e == g)) ok = false, ++bad;
      }
    if (ok) ++out.trials_passed;
    else if (first_failure.empty())
      first_failure = fmt::format("trial {}: {} element(s) outside atol={:g}, rtol={:g}", trial, bad, atol, rtol);
    all = all && ok;
  }
  out.status = all ? 0 : 1;
  set_detail(out, first_failure);
  if (!trials.empty() && timed_runs > 0) {  // KernelBench's timing: warm-up, then the median
    KernelRunner runner(*backend, *module, p, k.geometry(params, trials[0].inst.sizes));
    runner.load(trials[0].inst, true);
    for (int i = 0; i < 3; ++i) runner.launch();
    std::vector<double> t;
    for (int i = 0; i < timed_runs; ++i) t.push_back(runner.launch());
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    out.time_s = t[t.size() / 2];
  }
}

}  // namespace

KbCheckResult kernelbench_check(const Problem& p, const KernelSpec& k, const std::string& backend,
                                const std::vector<KbTrial>& trials, double atol, double rtol, double timeout_s,
                                int timed_runs) {
  KbCheckResult r;
  r.trials = static_cast<int>(trials.size());
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error("mmap failed");
  auto* shared = new (mem) Shared();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    munmap(mem, sizeof(Shared));
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    try {
      run_trials(*shared, p, k, backend, trials, atol, rtol, timed_runs);
    } catch (const std::exception& e) {
      shared->status = 3;
      set_detail(*shared, e.what());
    }
    std::fflush(nullptr);
    _exit(0);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  bool timed_out = false;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  static const char* kNames[] = {"passed", "incorrect", "compile_error", "crashed"};
  if (timed_out) {
    r.status = "timeout";
    r.detail = fmt::format("ran past {:g} s and was killed", timeout_s);
  } else if (WIFSIGNALED(status)) {
    r.status = "crashed";
    r.detail = fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else {
    r.status = kNames[std::clamp(shared->status, 0, 3)];
    r.detail = shared->detail;
  }
  r.trials_passed = shared->trials_passed;
  r.max_abs_diff = shared->max_abs_diff;
  r.time_s = shared->time_s;
  munmap(mem, sizeof(Shared));
  return r;
}

}  // namespace kforge
