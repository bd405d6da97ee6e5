#pragma once
// What Kernel Tuner's cache format and kforge's store agree on. Private to src/store/.
//
// A cache file: { "device_name", "kernel_name", "problem_size", "tune_params_keys",
// "tune_params", "objective", ..., "cache": { "v1,v2,...": { <params>, "time": ms | "ErrorName",
// "times": [ms...], "compile_time": ms, ... }, ... } }. kforge adds a "kforge" header object
// (problem, sizes, dtype, kernel, source hash, backend, device, fingerprint) so its own exports
// import back under their original keys; Kernel Tuner ignores it.
#include <string>
#include <string_view>

#include "kforge/store.hpp"

namespace kforge::kerneltuner {

// Kernel Tuner's error strings for a failed configuration, from a kforge disposition.
[[nodiscard]] std::string error_name(std::string_view disposition);
// A kforge disposition from a Kernel Tuner error string (unknown strings: "crashed").
[[nodiscard]] std::string disposition_of(std::string_view error_name);
// The backend name imported spaces carry: they replay, they never run.
inline constexpr const char* kRecordedBackend = "recorded";

}  // namespace kforge::kerneltuner
