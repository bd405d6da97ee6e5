// bench/similarity: how well k representatives of a recorded space estimate its total time
// (docs/prediction.md, "Kernel similarity"). Per space and k: the configurations are embedded by
// their features (kforge/predict.hpp), split into k clusters, and one random member of each,
// weighted by its cluster's size, estimates the sum of every configuration's recorded time
// (stratified sampling); against k configurations drawn at random, their mean times the count.
// Relative error |estimate / truth - 1|, median and 90th percentile over the seeds. No time is
// looked at to choose; failed configurations (no time) are left out of the set.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "kforge/predict.hpp"
#include "kforge/replay.hpp"
#include "kforge/rng.hpp"

namespace {

using namespace kforge;

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge: k representatives against k random configurations, estimating a space's total time"};
  std::vector<std::string> caches;
  std::vector<int> ks{10, 20, 50};
  int seeds = 25;
  app.add_option("caches", caches, "Kernel Tuner cache files")->required();
  app.add_option("--k", ks, "numbers of representatives")->delimiter(',');
  app.add_option("--seeds", seeds, "seeds per k");
  CLI11_PARSE(app, argc, argv);
  fmt::print("| space | configurations | k | representatives: median error | p90 | random: median error | p90 |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& path : caches) {
    const RecordedSpace r = RecordedSpace::load(path);
    const Dataset d = dataset(r);
    const Embedding e = embed(d.rows);
    const double truth = std::accumulate(d.time_ms.begin(), d.time_ms.end(), 0.0);
    const std::size_t n = d.rows.size();
    for (const int k : ks) {
      std::vector<double> rep, rnd;
      for (int s = 1; s <= seeds; ++s) {
        const auto seed = static_cast<std::uint64_t>(s);
        rep.push_back(std::fabs(estimate_total(representatives(e, static_cast<std::size_t>(k), seed), d.time_ms) / truth - 1));
        std::vector<std::size_t> idx(n);
        std::iota(idx.begin(), idx.end(), std::size_t{0});
        double sum = 0;
        for (std::size_t i = 0; i < static_cast<std::size_t>(k) && i < n; ++i) {
          std::swap(idx[i], idx[i + random_bits(seed, 91, i) % (n - i)]);
          sum += d.time_ms[idx[i]];
        }
        rnd.push_back(std::fabs(sum / std::min<double>(k, static_cast<double>(n)) * static_cast<double>(n) / truth - 1));
      }
      fmt::print("| {} | {} | {} | {:.1f}% | {:.1f}% | {:.1f}% | {:.1f}% |\n", std::filesystem::path(path).stem().string(), n, k,
                 100 * quantile(rep, 0.5), 100 * quantile(rep, 0.9), 100 * quantile(rnd, 0.5), 100 * quantile(rnd, 0.9));
    }
  }
  return 0;
}
