#include "agent/diff.hpp"

#include <fmt/format.h>

#include <sstream>
#include <vector>

namespace kforge::agent {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

std::string line_diff(const std::string& before, const std::string& after, int max_lines) {
  if (before == after) return {};
  const auto a = lines_of(before), b = lines_of(after);
  const std::size_t n = a.size(), m = b.size();
  if (n * m > 4'000'000) return fmt::format("(sources of {} and {} lines: too long to diff)\n", n, m);
  // Longest common subsequence, table from the end so the walk below goes forward.
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Op { char kind; std::size_t line; const std::string* text; };  // line: in `after`, 1-based
  std::vector<Op> ops;
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) { ops.push_back({' ', j + 1, &b[j]}); ++i; ++j; }
    else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) { ops.push_back({'-', j + 1, &a[i]}); ++i; }
    else { ops.push_back({'+', j + 1, &b[j]}); ++j; }  // removals first, as diff -u shows them
  }
  // Keep the changes and two lines of context around each; mark each hunk with its line.
  constexpr std::size_t kContext = 2;
  std::vector<bool> keep(ops.size(), false);
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (ops[k].kind != ' ')
      for (std::size_t c = k >= kContext ? k - kContext : 0; c <= std::min(ops.size() - 1, k + kContext); ++c)
        keep[c] = true;
  std::string out;
  int written = 0;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (!keep[k]) continue;
    if (k == 0 || !keep[k - 1]) out += fmt::format("@@ line {} @@\n", ops[k].line);
    if (++written > max_lines) { out += "(diff cut short)\n"; break; }
    out += fmt::format("{} {}\n", ops[k].kind, *ops[k].text);
  }
  return out;
}

}  // namespace kforge::agent
