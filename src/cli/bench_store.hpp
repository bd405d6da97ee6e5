#pragma once
// `kforge bench` reads the results store the way CLBlast reads its tuning database: with no
// --params, the best stored configuration for the problem, sizes, dtype, backend and machine
// runs, if one is stored; the output says where the parameters came from.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"

namespace kforge::cli {

struct ParamsSource {
  std::string source = "default";  // "user" (--params), "store" or "default"
  std::string db;                  // the database read, when "store"
  std::int64_t evaluation = 0, run = 0;
  double stored_median_s = 0;
  [[nodiscard]] nlohmann::json to_json() const;
  [[nodiscard]] std::string line() const;  // for the human output
};

// `--db FILE`, `--no-db`.
struct BenchStoreOptions {
  std::string db;
  bool no_db = false;
  void add_to(CLI::App& cmd);
  // Sets req.params from the store when `user_params` is empty and a usable configuration is
  // stored; says where the parameters came from.
  ParamsSource choose(EvalRequest& req, const Backend& backend, const std::string& user_params) const;
};

// Like print_results, with each result's params_source beside it.
void print_results_with_source(const std::vector<EvalResult>& results,
                               const std::vector<ParamsSource>& sources, bool json);

}  // namespace kforge::cli
