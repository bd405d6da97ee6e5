#pragma once
// `kforge bench --compare A.json B.json`: whether two recorded results differ beyond noise.
#include <string>

namespace kforge::cli {

// Pairs the results of the two files (same problem, kernel, backend, sizes, dtype; else by
// position), runs the Mann-Whitney U test on their samples and prints a table or JSON.
// Returns the exit code: 0 (the comparison ran), 2 (unreadable input).
int compare_result_files(const std::string& a, const std::string& b, bool json);

}  // namespace kforge::cli
