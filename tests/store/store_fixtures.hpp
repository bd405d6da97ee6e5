#pragma once
// What the store tests share: a fresh database path, a gemm request on the cpu kernel, and a
// result that looks measured without running anything.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "kforge/problem.hpp"
#include "kforge/store.hpp"
#include "test_util.hpp"

namespace kforge::test {

// A database path of its own for each test, with no file (nor -wal, -shm) left from before.
inline std::filesystem::path fresh_db(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("kforge-store-tests-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / (name + ".db");
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path.string() + suffix);
  return path;
}

inline EvalRequest gemm_request(const ParamValues& params = {},
                                const Sizes& sizes = {{"M", 64}, {"N", 48}, {"K", 32}}) {
  const auto p = find_problem("gemm");
  EvalRequest r;
  r.problem = "gemm";
  r.kernel = library_kernel(*p, Lang::cpp);
  r.sizes = p->resolve_sizes(sizes);
  r.params = params;
  r.backend = "cpu";
  return r;
}

// A passed evaluation whose samples are `median_s` and two neighbours.
inline EvalResult fake_result(const EvalRequest& req, double median_s,
                              Disposition d = Disposition::passed) {
  EvalResult r;
  r.disposition = d;
  r.problem = req.problem;
  r.kernel = req.kernel.name;
  r.backend = req.backend;
  r.device = "test cpu (2 threads)";
  r.sizes = req.sizes;
  r.params = req.kernel.resolve(req.params);
  r.dtype = req.dtype;
  r.compile_s = 0.25;
  if (d != Disposition::passed) {
    r.error = "it failed on purpose";
    return r;
  }
  VerifyReport v;
  v.trials_run = 2;
  v.worst_distribution = "normal";
  v.worst.elements = 64 * 48;
  v.worst.max_abs_error = 1e-6;
  v.worst.max_bound_ratio = 0.01;
  r.verify = v;
  r.timing = summarize({median_s * 0.99, median_s, median_s * 1.02});
  r.gflops = 2.0 * 64 * 48 * 32 / median_s * 1e-9;
  r.roofline = Roofline{0.25, "compute", 3.5};
  return r;
}

inline const std::string kFingerprint = machine_fingerprint("cpu", "test cpu (2 threads)");

}  // namespace kforge::test
