// Evaluation in a kforge-worker subprocess: the request goes in on stdin as JSON, the result
// comes back on stdout; a death or a hang of the worker is turned into a disposition here.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/resident_watch.hpp"
#include "eval/tsan_probe.hpp"
#include "eval/worker_path.hpp"
#include "kforge/sandbox.hpp"
#include "verify/progress.hpp"

namespace kforge {
namespace {

// The index_width run's own time limit, in evaluation timeouts (see evaluate_isolated).
constexpr double kIndexWidthTimeouts = 5;

std::string tail(const std::string& s, std::size_t n = 2000) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// The worker's stderr without its progress lines, and the last of them (verify/progress.hpp):
// the verification run the worker was in when it died.
struct WorkerStderr {
  std::string text, last_run;
};
WorkerStderr split_progress(const std::string& err) {
  WorkerStderr w;
  const std::string marker = kProgressMarker;
  for (std::size_t at = 0; at < err.size();) {
    const std::size_t nl = std::min(err.find('\n', at), err.size());
    const std::string line = err.substr(at, nl - at);
    if (line.rfind(marker, 0) == 0) w.last_run = line.substr(marker.size());
    else w.text += line + (nl < err.size() ? "\n" : "");
    at = nl + 1;
  }
  return w;
}

// What the index_width check takes on top of the limits (issue 24 allows raising them for this
// check; the worker does so for that run alone): address space for every tensor at the
// problem's wide sizes, mostly never touched, and resident memory for what is written (an
// elementwise output past 2^31 elements is written whole). Zeros when the request does not run it.
WideIndexBytes wide_index_room(const EvalRequest& req) {
  // Problem files declare no wide shape (and are not loaded twice here). The cpu backend runs
  // the check, and opencl on a device in the host's memory (PoCL); on an OpenCL GPU the worker
  // skips it, the room unused. CUDA never runs it.
  if (!req.verify.thorough || !req.verify.index_width || (req.backend != "cpu" && req.backend != "opencl") ||
      !req.problem_file.empty())
    return {};
  try {
    const auto p = find_problem(req.problem);
    const auto w = p->wide_index_shape(req.sizes);
    if (w.sizes.empty()) return {};
    return wide_index_bytes(*p, w, req.dtype);
  } catch (const std::exception&) {
    return {};  // the worker reports a bad problem
  }
}

}  // namespace

std::string worker_path() {
  if (const char* w = std::getenv("KFORGE_WORKER"); w && *w) return w;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = self.parent_path() / "kforge-worker";
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return KFORGE_WORKER_PATH;
}

EvalResult evaluate_isolated(const EvalRequest& req, const IsolationLimits& limits) {
  // The CUDA driver reserves address space far beyond any physical memory (unified
  // addressing), so an address-space limit would make cuInit fail: a CUDA worker gets only the
  // timeout, and the device's own memory bounds what its kernel can take.
  const long long memory = req.backend == "cuda" || limits.memory_bytes <= 0 ? 0 : limits.memory_bytes;
  // The index_width run's extra address space is the hard limit only: the worker raises its
  // own limit for that run and lowers it after (verify.cpp), so every other run keeps the limit.
  const WideIndexBytes wide = wide_index_room(req);
  const long long memory_hard = memory > 0 ? memory + static_cast<long long>(wide.address) : 0;
  // The same figure as resident memory, watched from here (resident_watch.hpp): the limit a kernel
  // cannot raise. It matters where the address-space limit can be raised: up to the hard limit,
  // which the sandbox lets the worker do for the address space alone (sandbox.cpp), and which
  // only the index_width run needs (its wide tensors are mapped, hardly any of it resident).
  // A problem loaded from a file in this process is loaded again by the worker, from its path.
  EvalRequest sent = req;
  if (sent.problem_file.empty()) {
    try {
      sent.problem_file = find_problem(req.problem)->source_file();
    } catch (const UsageError&) {
      // an unknown name: the worker reports it
    }
  }
  std::vector<std::string> argv{worker_path()};
  if (!limits.sandbox) argv.emplace_back("--no-sandbox");
  // The resident limit grows by what the wide run writes only where that is more than a few
  // megabytes (an elementwise output past 2^31 elements: the live rows of gemm and reduce fit
  // the ordinary limit); verify.cpp skips the run where the machine lacks the memory.
  const long long wide_resident = wide.resident > double(64 << 20) ? static_cast<long long>(wide.resident) : 0;
  ResidentWatch resident{.limit_bytes = memory > 0 ? memory + wide_resident : 0};
  // The index_width run is one launch at a shape past 2^31 elements: seconds for the library's
  // kernels, minutes for a plain candidate (a scalar attention, a kernel on PoCL). It gets a limit
  // of its own, kIndexWidthTimeouts times the evaluation's, counted from its start, so a correct
  // but slow kernel is not ended `timeout` by a check it has no say in.
  if (wide.address > 0) {
    resident.stretch_marker = std::string(kProgressMarker) + "index_width";
    resident.stretch_timeout_s = kIndexWidthTimeouts * limits.timeout_s;
  }
  const ProcessResult p = run_process(argv, sent.to_json().dump(),
                                      {.timeout_s = limits.timeout_s, .memory_bytes = memory,
                                       .memory_hard_bytes = memory_hard}, resident);
  std::string unreadable, refused;
  const WorkerStderr err = split_progress(p.err);
  const std::string during = err.last_run.empty() ? "" : " during verification run: " + err.last_run;
  if (p.ok()) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(p.out);
      if (j.contains("problem_error")) throw ProblemError(j.at("problem_error").get<std::string>());
      if (!j.contains("usage_error")) {
        EvalResult r = EvalResult::from_json(j);
        // VerifyOptions::tsan: a passed thorough verdict of a kernel goes to the race worker too.
        if (sent.verify.tsan && sent.verify.thorough && r.passed()) probe_races(sent, limits, worker_path(), r);
        return r;
      }
      refused = j.at("usage_error").get<std::string>();
    } catch (const ProblemError&) {
      throw;  // the problem file's fault, not the kernel's: the command exits 2
    } catch (const std::exception& e) {
      unreadable = e.what();  // reported as crashed below
    }
  }
  if (!refused.empty()) throw UsageError(refused);  // the request's fault, not the kernel's: exit 2
  EvalResult r;
  r.problem = req.problem;
  r.kernel = req.kernel.name;
  r.backend = req.backend;
  r.sizes = req.sizes;
  r.scalars = req.scalars;
  r.dtype = req.dtype;
  r.params = req.kernel.resolve(req.params);
  if (p.timed_out) {
    r.disposition = Disposition::timeout;
    r.error = resident.stretched
                  ? fmt::format("the index_width run ran past its own {:g} s limit ({:g} x --timeout)",
                                resident.stretch_timeout_s, kIndexWidthTimeouts)
                  : fmt::format("the evaluation ran past its {:g} s limit", limits.timeout_s);
    r.error += " and was killed (an endless loop or a kernel far too slow)" + during;
  } else if (p.signal == SIGSYS) {
    // The sandbox stopped a forbidden system call (sandbox.cpp); its report is dropped from
    // the stderr shown, the kernel's own output kept.
    r.disposition = Disposition::crashed;
    r.error = sandbox_violation(p.err) + during;
    std::string rest;
    for (std::size_t at = 0; at < err.text.size();) {
      const std::size_t nl = std::min(err.text.find('\n', at), err.text.size());
      const std::string line = err.text.substr(at, nl - at);
      if (!line.empty() && line.rfind(kSandboxMarker, 0) != 0) rest += line + "\n";
      at = nl + 1;
    }
    if (!rest.empty()) r.error += ": " + tail(rest);
  } else {
    r.disposition = Disposition::crashed;
    r.error = unreadable.empty() ? "the worker running the kernel " + describe(p, resident)
                                 : "the worker's result could not be read (" + unreadable + ")";
    r.error += during;
    if (!err.text.empty()) r.error += ": " + tail(err.text);
  }
  // A crash in the index_width run is that check's finding: a 32-bit flat index that wrapped
  // to a negative offset reads gigabytes before the buffer, where nothing is mapped.
  if (!p.timed_out && err.last_run.rfind("index_width", 0) == 0) {
    VerifyReport v;
    v.passed = false;
    v.failed_check = v.element_check = "index_width";
    v.failure = "index_width: " + r.error;
    v.seed = req.verify.seed;
    v.failed_sizes = req.sizes;
    v.checks.push_back({"index_width", false, v.failure});
    r.verify = std::move(v);
  }
  return r;
}

}  // namespace kforge
