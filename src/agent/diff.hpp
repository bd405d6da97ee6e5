#pragma once
// A line diff of a candidate against the best so far, for the journal and the feedback: what
// changed, in hunks with two lines of context, the way `diff -u` shows it.
#include <string>

namespace kforge::agent {

// "" when equal; capped at `max_lines` lines of output.
[[nodiscard]] std::string line_diff(const std::string& before, const std::string& after, int max_lines = 200);

}  // namespace kforge::agent
