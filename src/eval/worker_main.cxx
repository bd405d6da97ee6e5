// kforge-worker: evaluates one request (JSON on stdin) and prints the result (JSON on stdout).
// It exists so that an untrusted kernel can only ever crash this process, never its caller.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>

#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/util.hpp"

int main() {
  kforge::keep_freed_memory();
  // The kernel may print; keep fd 1 for the result alone by moving its stdout to stderr.
  const int result_fd = dup(1);
  dup2(2, 1);
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  nlohmann::json out;
  int code = 0;
  try {
    const auto req = kforge::EvalRequest::from_json(nlohmann::json::parse(input));
    auto backend = kforge::make_backend(req.backend, req.backend_options);
    out = kforge::evaluate(req, *backend).to_json();
  } catch (const kforge::ProblemError& e) {
    out = {{"problem_error", e.what()}};  // the problem's fault: the caller exits 2, not "crashed"
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kforge-worker: %s\n", e.what());
    code = 3;
  }
  if (code == 0) {
    const std::string text = out.dump();
    if (write(result_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) code = 4;
  }
  std::fflush(nullptr);
  _exit(code);  // skip static destructors a broken kernel may have corrupted
}
