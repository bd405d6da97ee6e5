#pragma once
// Shared by the kernel-family tests: a request for a library kernel on a backend, a planted bug
// in its source, and a failure message that says everything needed to replay it.
#include <gtest/gtest.h>

#include <string>

#include "backend/kernel_includes.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"

namespace kforge::test {

// The library kernel of `problem` for `backend` ("cpu" or "opencl") at `sizes` (the rest of its
// parameters at their defaults), verified with the default (thorough) protocol, without the
// index_width check (as the CLI verifies library kernels: the row-wise families' wide run writes
// 8 GiB; tests/verify/index_width_*_test.cpp run it).
inline EvalRequest library_request(const std::string& problem, const std::string& backend,
                                   const Sizes& sizes, DType t = DType::fp32,
                                   const ParamValues& params = {}) {
  const auto p = find_problem(problem);
  EvalRequest req;
  req.problem = problem;
  req.sizes = p->resolve_sizes(sizes);
  req.kernel = library_kernel(*p, backend == "cpu" ? Lang::cpp : Lang::opencl, req.sizes);
  req.dtype = t;
  req.params = params;
  req.backend = backend;
  req.verify.index_width = false;
  return req;
}

// Replaces the first `from` in the kernel's source by `to`, after the shared headers it includes
// (kernels/common/) are put in, so a planted bug may sit in shared code too. Fails the test
// where `from` is not there (the source moved on: the edit would test nothing).
inline void plant(EvalRequest& req, const std::string& from, const std::string& to) {
  req.kernel.source = expand_kernel_includes(req.kernel.source, req.kernel.source_path);
  const auto at = req.kernel.source.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) req.kernel.source.replace(at, from.size(), to);
}

inline std::string describe(const EvalResult& r) {
  std::string s = r.problem + " on " + r.backend + " " + std::string(dtype_name(r.dtype));
  for (const auto& [k, v] : r.sizes) s += " " + k + "=" + std::to_string(v);
  return s + ": " + std::string(disposition_name(r.disposition)) + ": " + r.error + "\n" + r.compile_log;
}

}  // namespace kforge::test
