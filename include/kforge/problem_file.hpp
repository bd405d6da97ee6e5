#pragma once
// Problems from files: a user's or an agent's own problem, declared in JSON with a reference in
// C++ beside it (docs/problem-files.md), loaded with no rebuild of kforge.
#include <memory>
#include <string>
#include <vector>

#include "kforge/problem.hpp"

namespace kforge {

// Loads a problem file once per process (later calls return the same problem); throws
// ProblemError naming the file and field. Its name must not be a library problem's, nor that of
// another file loaded before.
[[nodiscard]] std::shared_ptr<Problem> load_problem_file(const std::string& path);

// Every problem file in `dir` (not recursive; kernel specs beside them are skipped), by name.
[[nodiscard]] std::vector<std::shared_ptr<Problem>> problems_in(const std::string& dir);

// The folders of $KFORGE_PROBLEM_PATH (colon-separated), whose problem files `find_problem`
// finds by name and `kforge list` lists.
[[nodiscard]] std::vector<std::string> problem_path();

}  // namespace kforge
