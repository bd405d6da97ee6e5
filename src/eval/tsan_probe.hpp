#pragma once
// The ThreadSanitizer run of a cpu candidate (VerifyOptions::tsan, docs/verification.md,
// "ThreadSanitizer"): after the ordinary worker passed it, a second worker with ThreadSanitizer's
// runtime preloaded runs it once more, built with -fsanitize=thread, each block on a thread of
// its own (BackendOptions::tsan). A data race report with an access in the kernel's code makes
// the verdict `nondeterministic`, check `race`, naming the two accesses.
#include <string>
#include <vector>

#include "kforge/evaluate.hpp"
#include "kforge/subprocess.hpp"

namespace kforge {

// ThreadSanitizer's shared runtime for the compiler that builds cpu kernels:
// $KFORGE_TSAN_RUNTIME, else what CMake found (KFORGE_TSAN_RUNTIME), else empty (none).
[[nodiscard]] std::string tsan_runtime();

// The race worker of a passed thorough verdict. opencl: Oclgrind (probe_oclgrind,
// oclgrind_probe.hpp). cpu: the rest of this comment.
// Runs `sent` in the race worker (`worker`: the kforge-worker binary) and reads its reports
// into `r`: a data race with an access in the kernel's code fails a passed verdict
// (`nondeterministic`, check `race`, naming both accesses by source line; a verdict that had
// already failed keeps its failure and lists the race beside it); none adds a passed `race`
// check; a race worker that could not run adds a passed check saying why (the verdict stands).
// The race worker has the time limit and, instead of an address-space limit (ThreadSanitizer
// reserves terabytes of address space for its shadow memory, backed only where the kernel
// touches), limits.memory_bytes as a limit on its resident memory, watched by the caller.
void probe_races(const EvalRequest& sent, const IsolationLimits& limits, const std::string& worker,
                 EvalResult& r);

}  // namespace kforge
