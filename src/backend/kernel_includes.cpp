#include "backend/kernel_includes.hpp"

#include <set>
#include <sstream>
#include <string_view>

#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

std::string line_directive(int line, const std::string& file) {
  std::string quoted;
  for (const char c : file) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c == '\n' ? ' ' : c;
  }
  return "#line " + std::to_string(line) + " \"" + quoted + "\"\n";
}

// The header named by `#include "kernels/..."` on this line; empty for any other line.
std::string kernel_header(std::string_view line) {
  const auto skip_blanks = [&] {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  };
  skip_blanks();
  if (!line.starts_with('#')) return {};
  line.remove_prefix(1);
  skip_blanks();
  if (!line.starts_with("include")) return {};
  line.remove_prefix(7);
  skip_blanks();
  if (!line.starts_with("\"kernels/")) return {};
  line.remove_prefix(1);
  const auto end = line.find('"');
  return end == std::string_view::npos ? std::string() : std::string(line.substr(0, end));
}

bool carried(const std::string& header) {
  const auto paths = embedded_paths(header);
  return !paths.empty() && paths.front() == header;
}

void expand(const std::string& text, const std::string& name, std::set<std::string>& seen, std::string& out) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool resume = false;  // a header went in: say where this file goes on
  while (std::getline(in, line)) {
    ++number;
    const std::string header = kernel_header(line);
    if (header.empty()) {
      if (resume) out += line_directive(number, name), resume = false;
      out += line + '\n';
      continue;
    }
    if (!carried(header)) {
      std::string have;
      for (const auto& p : embedded_paths("kernels/common/")) have += "\n  " + p;
      throw CompileError(name + ":" + std::to_string(number) + ": includes \"" + header +
                             "\", which kforge does not carry",
                         "the kernel headers it carries:" + have);
    }
    if (seen.insert(header).second) {
      out += line_directive(1, header);
      expand(embedded_file(header), header, seen, out);
    }
    resume = true;
  }
}

}  // namespace

std::string expand_kernel_includes(const std::string& source, const std::string& name) {
  if (source.find("\"kernels/") == std::string::npos) return source;  // the usual case: untouched
  std::set<std::string> seen;
  std::string out;
  expand(source, name.empty() ? "kernel.cpp" : name, seen, out);
  return out;
}

}  // namespace kforge
