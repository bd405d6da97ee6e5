#pragma once
// Small shared helpers: content hashing, cache folders, embedded files, text.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// FNV-1a 64-bit over the bytes of `text`, chainable through `seed`.
[[nodiscard]] std::uint64_t hash64(std::string_view text,
                                   std::uint64_t seed = 0xcbf29ce484222325ull);
[[nodiscard]] std::string hex64(std::uint64_t v);

// $KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge; created on demand.
[[nodiscard]] std::filesystem::path cache_dir(std::string_view sub = {});

// A file that kforge carries inside its binary (kernel sources and specs, micro-benchmarks),
// by its path in the source tree, e.g. "kernels/gemm/gemm.cl". Throws UsageError if absent.
[[nodiscard]] const std::string& embedded_file(const std::string& path);
[[nodiscard]] std::vector<std::string> embedded_paths(std::string_view prefix);

[[nodiscard]] std::string read_file(const std::filesystem::path& p);  // throws UsageError
// Writes through a temporary and a rename, so a reader never sees half a file.
void write_file_atomic(const std::filesystem::path& p, std::string_view text);

// Splits [0, n) into one contiguous range per core and runs body(begin, end) on each, for
// references and other host loops whose iterations are independent. Ranges hold at least
// `min_per_thread` iterations: a loop too short to pay for a thread runs on the caller alone.
void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& body,
                  std::int64_t min_per_thread = 1);

// Asks the allocator to keep freed memory for reuse rather than hand it back to the kernel.
// Verification at sizes beyond the last-level cache allocates gigabytes per trial, and the
// kernel's zeroing of fresh pages took a third of a `kforge bench` there. Called first in main.
void keep_freed_memory();

[[nodiscard]] std::vector<std::string> split(std::string_view s, char sep);
[[nodiscard]] std::string trim(std::string_view s);

}  // namespace kforge
