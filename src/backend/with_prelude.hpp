#pragma once
// The opencl and cuda backends compile one text: their prelude (the kf_ helpers every kernel
// uses), then the kernel's source. A `#line 1 "<file>"` in front of each part restarts the line
// count, so the compiler's messages name the kernel's own file and lines (or the prelude's).
// The cpu backend gives g++ its prelude with -include instead, which needs no such line. The
// kernel's own `#include "kernels/..."` headers go in as well (kernel_includes.hpp).
#include <string>

#include "backend/kernel_includes.hpp"
#include "kforge/util.hpp"

namespace kforge {

// `prelude` is the prelude's path among the embedded files; `name` the kernel's file for the
// messages, `fallback` standing in when it is empty.
inline std::string with_prelude(const std::string& prelude, const std::string& source,
                                const std::string& name, const char* fallback) {
  const auto line_1 = [](const std::string& file) {
    std::string quoted;
    for (const char c : file) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c == '\n' ? ' ' : c;
    }
    return "#line 1 \"" + quoted + "\"\n";
  };
  std::string text = line_1(prelude) + embedded_file(prelude);
  if (!text.empty() && text.back() != '\n') text += '\n';
  const std::string file = name.empty() ? std::string(fallback) : name;
  return text + line_1(file) + expand_kernel_includes(source, file);
}

}  // namespace kforge
