// kforge as a library: verify and time the shipped cpu GEMM at an odd shape, beside OpenBLAS,
// and print the result as JSON. Build: part of the project (build/examples/evaluate_api).
#include <cstdio>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"

int main() {
  using namespace kforge;
  auto backend = make_backend("cpu");
  const auto problem = find_problem("gemm");

  EvalRequest req;
  req.problem = problem->name();
  req.kernel = library_kernel(*problem, backend->lang());
  req.sizes = problem->resolve_sizes({{"M", 333}, {"N", 257}, {"K", 129}});
  req.params = {{"MR", 4}, {"NV", 4}};  // the rest keep the spec's defaults
  req.bench = req.baseline = true;

  const EvalResult r = evaluate(req, *backend);
  std::printf("%s\n", r.to_json().dump(2).c_str());
  return r.passed() ? 0 : 1;
}
