// bench/predict_cv: how well kforge's performance model predicts recorded GPU spaces, and how
// many evaluations its prior saves the bayes tuner. Three tables (Markdown):
//  1. within a space: 5-fold cross-validation, MAPE and Spearman rank correlation per fold
//     (median and min..max over the folds);
//  2. across devices: train on the other devices' spaces of the same kernel, predict the
//     held-out device's whole space (one number each);
//  3. the prior: bayes with and without the leave-one-device-out model as its prior, the same
//     seeds, evaluations to within 5% and 1% of the optimum (median and min..max over seeds;
//     a seed that never got there counts as "never"; "-" when fewer than half got there).
// Spaces are grouped into kernels by file name: KERNEL_DEVICE.json.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "kforge/predict.hpp"
#include "kforge/replay.hpp"
#include "kforge/util.hpp"

namespace {

using namespace kforge;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
std::string spread(const std::vector<double>& v, const char* f) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format(fmt::runtime(std::string(f) + " ({}..{})"), median(v), fmt::format(fmt::runtime(f), *lo),
                     fmt::format(fmt::runtime(f), *hi));
}
std::string evals(const std::vector<double>& v) {
  const auto reached = std::count_if(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  if (2 * reached < static_cast<long>(v.size())) return fmt::format("- ({}/{} got there)", reached, v.size());
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format("{:.0f} ({:.0f}..{})", median(v), *lo, std::isfinite(*hi) ? fmt::format("{:.0f}", *hi) : "never");
}
std::string kernel_of(const std::string& file) {
  const std::string stem = std::filesystem::path(file).stem().string();
  return stem.substr(0, stem.rfind('_'));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge performance models on recorded spaces: cross-validation and the tuner's prior"};
  std::vector<std::string> files;
  int seeds = 25, budget = 200, threads = 2, trees = 300;
  std::string kind = "gbt", json_out;
  bool no_prior = false, no_cv = false;
  app.add_option("caches", files, "Kernel Tuner cache files named KERNEL_DEVICE.json")->required();
  app.add_option("--seeds", seeds, "tuner seeds 1..N")->capture_default_str();
  app.add_option("--budget", budget, "evaluations per tuning run")->capture_default_str();
  app.add_option("--threads", threads, "tuning runs in parallel")->capture_default_str();
  app.add_option("--trees", trees, "trees of the model")->capture_default_str();
  app.add_option("--kind", kind, "gbt or forest")->capture_default_str();
  app.add_flag("--no-prior", no_prior, "only the prediction tables");
  app.add_flag("--no-cv", no_cv, "skip the within-space cross-validation table");
  app.add_option("--json", json_out, "write every number here");
  CLI11_PARSE(app, argc, argv);

  ModelOptions mo;
  mo.kind = kind;
  mo.trees = trees;
  mo.interval = false;
  std::vector<RecordedSpace> spaces;
  std::vector<Dataset> data;
  for (const auto& f : files) {
    spaces.push_back(RecordedSpace::load(f));
    data.push_back(dataset(spaces.back()));
  }
  nlohmann::json doc{{"kind", kind}, {"trees", trees}, {"seeds", seeds}, {"budget", budget}, {"spaces", nlohmann::json::array()}};

  fmt::print("## Within a space: 5-fold cross-validation ({} model of log(time))\n\n", kind);
  fmt::print("| space | configs timed | MAPE % median (min..max) | Spearman median (min..max) |\n|---|---:|---:|---:|\n");
  for (std::size_t i = 0; i < files.size(); ++i) {
    doc["spaces"].push_back({{"space", files[i]}});
    if (no_cv) continue;
    const std::vector<FoldScore> f = cross_validate(data[i], 5, mo);
    std::vector<double> m, s;
    for (const auto& x : f) m.push_back(100 * x.mape), s.push_back(x.spearman);
    fmt::print("| {} | {} | {} | {} |\n", std::filesystem::path(files[i]).stem().string(), data[i].rows.size(),
               spread(m, "{:.1f}"), spread(s, "{:.3f}"));
    std::fflush(stdout);
    doc["spaces"][i]["cv_mape"] = m;
    doc["spaces"][i]["cv_spearman"] = s;
  }

  // Leave one device out: a model of the same kernel from the other devices' spaces.
  fmt::print("\n## Across devices: trained on the other devices' spaces of the kernel\n\n");
  fmt::print("| held-out space | trained on | MAPE % | Spearman | best predicted: its true time / optimum |\n|---|---|---:|---:|---:|\n");
  std::vector<std::optional<PerfModel>> lodo(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    Dataset tr;
    std::string on;
    for (std::size_t j = 0; j < files.size(); ++j) {
      if (j == i || kernel_of(files[j]) != kernel_of(files[i])) continue;
      tr.rows.insert(tr.rows.end(), data[j].rows.begin(), data[j].rows.end());
      tr.time_ms.insert(tr.time_ms.end(), data[j].time_ms.begin(), data[j].time_ms.end());
      on += (on.empty() ? "" : ", ") + std::filesystem::path(files[j]).stem().string();
    }
    if (tr.rows.empty()) continue;
    lodo[i] = PerfModel::train(tr.rows, tr.time_ms, mo);
    std::vector<double> p = lodo[i]->predict_log(data[i].rows);
    for (double& v : p) v = std::exp(v);
    const std::size_t top = static_cast<std::size_t>(std::min_element(p.begin(), p.end()) - p.begin());
    const double regret = data[i].time_ms[top] / spaces[i].optimum_ms;
    const double m = 100 * mape(p, data[i].time_ms), s = spearman(p, data[i].time_ms);
    fmt::print("| {} | {} | {:.1f} | {:.3f} | {:.3f} |\n", std::filesystem::path(files[i]).stem().string(), on, m, s, regret);
    std::fflush(stdout);
    doc["spaces"][i]["cross_device"] = {{"trained_on", on}, {"mape", m}, {"spearman", s}, {"top_regret", regret}};
  }
  if (no_prior) {
    if (!json_out.empty()) std::ofstream(json_out) << doc.dump(1) << "\n";
    return 0;
  }

  fmt::print("\n## The prior: bayes with the leave-one-device-out model, {} seeds, budget {}\n\n", seeds, budget);
  fmt::print("| space | configs | evals to 5%: bayes | with prior | evals to 1%: bayes | with prior |\n|---|---:|---:|---:|---:|---:|\n");
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!lodo[i]) continue;
    const std::vector<double> prior = lodo[i]->predict_space(spaces[i].space);
    StrategyOptions with;
    with.budget = budget;
    with.prior = [&prior](const Space&) { return prior; };
    StrategyOptions without;
    without.budget = budget;
    std::vector<ReplayResult> results(2 * static_cast<std::size_t>(seeds));
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < std::max(1, threads); ++t)
      pool.emplace_back([&] {
        for (std::size_t k; (k = next++) < results.size();)
          results[k] = replay(spaces[i], "bayes", {.evaluations = budget}, k / 2 + 1, k % 2 ? with : without);
      });
    for (auto& t : pool) t.join();
    std::vector<double> to5[2], to1[2];
    for (std::size_t k = 0; k < results.size(); ++k) {
      to5[k % 2].push_back(results[k].to_within_5 < 0 ? INFINITY : results[k].to_within_5);
      to1[k % 2].push_back(results[k].to_within_1 < 0 ? INFINITY : results[k].to_within_1);
    }
    fmt::print("| {} | {} | {} | {} | {} | {} |\n", std::filesystem::path(files[i]).stem().string(), spaces[i].space.size(),
               evals(to5[0]), evals(to5[1]), evals(to1[0]), evals(to1[1]));
    std::fflush(stdout);
    auto js = [](const std::vector<double>& v) {
      nlohmann::json a = nlohmann::json::array();
      for (double x : v) a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json());
      return a;
    };
    doc["spaces"][i]["prior"] = {{"to5_bayes", js(to5[0])}, {"to5_prior", js(to5[1])}, {"to1_bayes", js(to1[0])}, {"to1_prior", js(to1[1])}};
  }
  if (!json_out.empty()) std::ofstream(json_out) << doc.dump(1) << "\n";
  return 0;
}
