#include "cli/bench_store.hpp"

#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/store_options.hpp"
#include "kforge/store.hpp"

namespace kforge::cli {

nlohmann::json ParamsSource::to_json() const {
  nlohmann::json j = {{"params_source", source}};
  if (source == "store")
    j["params_store"] = {{"db", db}, {"evaluation", evaluation}, {"run", run}, {"stored_median_s", stored_median_s}};
  return j;
}

std::string ParamsSource::line() const {
  if (source == "user") return "params: as given (--params)";
  if (source == "default") return "params: the kernel's defaults (no tuned configuration stored for this instance and machine)";
  return fmt::format("params: from the results store, the best stored configuration (evaluation {} of run {}, "
                     "{:.4g} ms when tuned) in {}",
                     evaluation, run, stored_median_s * 1e3, db);
}

void BenchStoreOptions::add_to(CLI::App& cmd) {
  add_db_option(cmd, db);
  cmd.add_flag("--no-db", no_db, "ignore stored tuning results: without --params, run the defaults");
}

ParamsSource BenchStoreOptions::choose(EvalRequest& req, const Backend& backend,
                                       const std::string& user_params) const {
  ParamsSource s;
  if (!user_params.empty()) {
    s.source = "user";
    return s;
  }
  if (no_db) return s;
  const auto path = store_path(db);
  std::optional<StoredEvaluation> best;
  try {
    const auto store = open_store_if_exists(path);
    if (store) best = best_known(*store, req, machine_fingerprint(backend.name(), backend.device()));
  } catch (const StoreError& e) {  // an unreadable store never stops a benchmark
    fmt::print(stderr, "kforge: warning: ignoring the results store: {}\n", e.what());
  }
  if (!best) return s;
  const nlohmann::json params = best->params();
  for (const auto& [k, v] : params.items()) req.params[k] = v.get<std::int64_t>();
  s.source = "store";
  s.db = path.string();
  s.evaluation = best->id;
  s.run = best->run_id;
  s.stored_median_s = best->median_s.value_or(0);
  return s;
}

void print_results_with_source(const std::vector<EvalResult>& results,
                               const std::vector<ParamsSource>& sources, bool json) {
  if (!json) {
    print_results(results, false, true);
    for (std::size_t i = 0; i < results.size() && i < sources.size(); ++i)
      fmt::print("{}{}\n", results.size() > 1 ? results[i].backend + " " : "", sources[i].line());
    return;
  }
  nlohmann::json a = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    nlohmann::json j = results[i].to_json();
    if (i < sources.size()) j.update(sources[i].to_json());
    a.push_back(std::move(j));
  }
  fmt::print("{}\n", (a.size() == 1 ? a[0] : a).dump(2));
}

}  // namespace kforge::cli
