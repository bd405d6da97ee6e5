#pragma once
// Shared by the kernel-family tests: a request for a library kernel on a backend, a planted bug
// in its source, a failure message that says everything needed to replay it, and a tensor
// loaded by hand for a test that launches a kernel itself.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/kernel_includes.hpp"
#include "kforge/backend.hpp"
#include "kforge/dtype.hpp"
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

// Tensor t of `in` in a buffer of its storage type (the instance's dtype, or the tensor's own:
// int32 indices), as the runner lays it out; an output (or scratch) tensor holds `fill` in every
// element instead, at the problem's element count, so an element the kernel skips shows.
inline std::unique_ptr<Buffer> upload_tensor(Backend& backend, const Problem& p, const Instance& in, std::size_t t,
                                             double fill = -7.0) {
  const TensorSpec spec = p.tensors().at(t);
  std::vector<double> values = in.tensors[t];
  if (spec.role != Role::in) values.assign(static_cast<std::size_t>(p.tensor_elements(t, in.sizes)), fill);
  const DType type = storage_dtype(spec, in.dtype);
  std::vector<unsigned char> host(values.size() * dtype_size(type));
  encode(type, values, host.data());
  auto b = backend.alloc(host.size());
  backend.write(*b, host.data(), host.size());
  return b;
}

}  // namespace kforge::test
