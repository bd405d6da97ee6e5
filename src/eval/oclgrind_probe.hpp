#pragma once
// The race worker of an OpenCL candidate (VerifyOptions::tsan, docs/verification.md, "Oclgrind"):
// after the ordinary worker passed it thoroughly, a second worker runs it once more, at a small
// instance, on Oclgrind's simulated device (its runtime preloaded, data-race detection on).
// Oclgrind runs every work-item of the grid under its own memory model and reports each pair of
// conflicting accesses not ordered by a barrier (inside a work-group) or by the launch (between
// work-groups), and each access outside a buffer. A race report makes the verdict
// `nondeterministic`, check `race`; an out-of-bounds report `incorrect`, check `oob_read` (a
// read) or `guard` (a write); each names both accesses (or the one) as Oclgrind reports them.
#include <string>

#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"

namespace kforge {

// Oclgrind's runtime library (the one its `oclgrind` command preloads):
// $KFORGE_OCLGRIND_RUNTIME, else the first of Debian's and a source install's paths that exists,
// else empty (not installed: the check reports itself skipped).
[[nodiscard]] std::string oclgrind_runtime();

// The sizes the Oclgrind run uses: `requested` shrunk (the largest size halved, again and again)
// until the problem's fuzz_work is at most `work_cap`, keeping only sizes the problem and the
// kernel (its constraints at `req`'s parameters) accept; the requested sizes when none smaller is.
// Oclgrind interprets every work-item: a 64³ gemm takes it about 15 s, 32³ about 2 s.
[[nodiscard]] Sizes oclgrind_sizes(const EvalRequest& req, const Problem& p, double work_cap = 4e4);

// Runs `sent` (an opencl request) in the Oclgrind race worker and reads its reports into `r`
// (see above); no report adds a passed `race` check; a worker that could not run, or no Oclgrind,
// adds a passed `race` check saying why (the verdict stands). Limits: the ordinary worker's.
void probe_oclgrind(const EvalRequest& sent, const IsolationLimits& limits, const std::string& worker,
                    EvalResult& r);

}  // namespace kforge
