// bench/strategies: every kforge strategy on recorded spaces (Kernel Tuner cache files), for
// several budgets over many seeds. Per space, strategy and budget: the median over seeds of
// best found / optimum, and the median evaluations needed to come within 5% and 1% of the
// optimum (from the runs with the largest budget; "-" when fewer than half the seeds got
// there). Prints a Markdown table; --json writes every number for bench/strategies_kerneltuner.py.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "kforge/replay.hpp"
#include "kforge/util.hpp"
#include "kforge/measure.hpp"

namespace {

using namespace kforge;

std::string evals(double m) { return std::isfinite(m) ? fmt::format("{:.0f}", m) : "-"; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge strategies on recorded spaces"};
  std::vector<std::string> files;
  std::string strategies = "random,anneal,genetic,mapelites,bayes", budgets_s = "20,50,100,200", json_out;
  int seeds = 25, threads = 2;
  app.add_option("caches", files, "Kernel Tuner cache files")->required();
  app.add_option("--strategies", strategies, "comma-separated")->capture_default_str();
  app.add_option("--budgets", budgets_s, "comma-separated evaluation budgets")->capture_default_str();
  app.add_option("--seeds", seeds, "seeds 1..N per budget")->capture_default_str();
  app.add_option("--threads", threads, "runs in parallel")->capture_default_str();
  app.add_option("--json", json_out, "write every result here");
  CLI11_PARSE(app, argc, argv);

  std::vector<int> budgets;
  for (const auto& b : split(budgets_s, ',')) budgets.push_back(std::stoi(b));
  const std::vector<std::string> names = split(strategies, ',');
  const int max_budget = *std::max_element(budgets.begin(), budgets.end());

  nlohmann::json doc{{"tool", "kforge"}, {"seeds", seeds}, {"budgets", budgets}, {"spaces", nlohmann::json::array()}};
  fmt::print("| space | configs | strategy |");
  for (int b : budgets) fmt::print(" best/opt @{} |", b);
  fmt::print(" evals to 5% | evals to 1% |\n|---|---:|---|");
  for (std::size_t i = 0; i < budgets.size() + 2; ++i) fmt::print("---:|");
  fmt::print("\n");
  for (const std::string& file : files) {
    const RecordedSpace r = RecordedSpace::load(file);
    const std::string space = std::filesystem::path(file).stem().string();
    nlohmann::json js{{"space", space}, {"file", file}, {"configurations", r.space.size()},
                      {"optimum_ms", r.optimum_ms}, {"strategies", nlohmann::json::object()}};
    struct Job { std::size_t s; int budget, seed; };
    std::vector<Job> jobs;
    for (std::size_t s = 0; s < names.size(); ++s)
      for (int b : budgets)
        for (int seed = 1; seed <= seeds; ++seed) jobs.push_back({s, b, seed});
    std::vector<ReplayResult> results(jobs.size());
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < std::max(1, threads); ++t)
      pool.emplace_back([&] {
        for (std::size_t i; (i = next++) < jobs.size();)
          results[i] = replay(r, names[jobs[i].s], {.evaluations = jobs[i].budget}, jobs[i].seed);
      });
    for (auto& t : pool) t.join();
    for (std::size_t s = 0; s < names.size(); ++s) {
      nlohmann::json jst{{"ratio", nlohmann::json::object()}, {"runs", nlohmann::json::object()}};
      fmt::print("| {} | {} | kforge {} |", space, r.space.size(), names[s]);
      std::vector<double> to5, to1;
      for (int b : budgets) {
        std::vector<double> ratio;
        nlohmann::json runs = nlohmann::json::array();
        for (std::size_t i = 0; i < jobs.size(); ++i) {
          if (jobs[i].s != s || jobs[i].budget != b) continue;
          const ReplayResult& x = results[i];
          ratio.push_back(x.ratio > 0 ? x.ratio : INFINITY);
          runs.push_back({{"seed", jobs[i].seed}, {"ratio", x.ratio}, {"to5", x.to_within_5}, {"to1", x.to_within_1}});
          if (b == max_budget) {
            to5.push_back(x.to_within_5 < 0 ? INFINITY : x.to_within_5);
            to1.push_back(x.to_within_1 < 0 ? INFINITY : x.to_within_1);
          }
        }
        jst["ratio"][std::to_string(b)] = median_of(ratio);
        jst["runs"][std::to_string(b)] = runs;
        fmt::print(" {:.3f} |", median_of(ratio));
      }
      jst["to5"] = std::isfinite(median_of(to5)) ? nlohmann::json(median_of(to5)) : nlohmann::json();
      jst["to1"] = std::isfinite(median_of(to1)) ? nlohmann::json(median_of(to1)) : nlohmann::json();
      fmt::print(" {} | {} |\n", evals(median_of(to5)), evals(median_of(to1)));
      std::fflush(stdout);
      js["strategies"]["kforge " + names[s]] = jst;
    }
    doc["spaces"].push_back(js);
  }
  if (!json_out.empty()) std::ofstream(json_out) << doc.dump(1) << "\n";
  return 0;
}
