// Shared by the race-worker tests (tsan_race_test.cpp: cpu, oclgrind_race_test.cpp: opencl):
// a gemm candidate as `kforge eval --source PATH --grid ... [--block ...]` makes it, with the
// race worker asked for, and the verdict the ordinary worker returns when verification passed
// (the race worker runs only after one).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge::test {

inline std::string worker_path() {
  return (std::filesystem::path(KFORGE_CLI_PATH).parent_path() / "kforge-worker").string();
}

inline EvalRequest race_candidate(const std::string& lang, const std::string& path,
                                  const std::vector<std::string>& grid, const std::vector<std::string>& block,
                                  const ParamValues& params, const Sizes& sizes) {
  const auto p = find_problem("gemm");
  nlohmann::json spec = {{"problem", "gemm"}, {"name", "candidate"}, {"lang", lang},
                         {"grid", grid},      {"dtypes", {"fp32"}}};
  if (!block.empty()) spec["block"] = block;
  KernelSpec k = KernelSpec::from_json_with_source(spec, read_file(path));
  k.source_path = path;
  for (const auto& [name, v] : params) {
    k.params.push_back({name, {v}});
    k.defaults[name] = v;
  }
  EvalRequest r;
  r.problem = "gemm";
  r.kernel = k;
  r.sizes = p->resolve_sizes(sizes);
  r.backend = lang == "cpp" ? "cpu" : lang;
  r.verify.tsan = true;
  return r;
}

inline EvalResult passed_verdict(const EvalRequest& req) {
  EvalResult r;
  r.disposition = Disposition::passed;
  r.sizes = req.sizes;
  r.verify = VerifyReport{};
  r.verify->passed = true;
  return r;
}

}  // namespace kforge::test
