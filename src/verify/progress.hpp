#pragma once
// Where the verification protocol is: before every kernel run it names the run (check, trial,
// sizes, inputs, scalars) to a hook. The isolated worker prints it to stderr, so that when the
// kernel crashes or hangs the caller can say in which run (src/eval/isolate.cpp).
#include <functional>
#include <string>

namespace kforge {

// Lines the worker prints start with this; the caller keeps the last one and drops the rest
// from the stderr it shows.
inline constexpr const char* kProgressMarker = "kforge-progress: ";

// Installs the hook (empty: none, the default). Not thread-safe: set it before verifying.
void set_verify_progress(std::function<void(const std::string& where)> hook);
// Calls the hook, if any.
void verify_progress(const std::string& where);

}  // namespace kforge
