// MAP-Elites: an archive keeps the best configuration for each cell of a behaviour grid, the
// grid being the values of two descriptor parameters. After a random start, each proposal is
// a mutation (one to three moves) of an elite drawn uniformly from the occupied cells, so the
// search keeps a spread of good, different configurations rather than one basin.
#include <algorithm>
#include <array>
#include <map>

#include "kforge/error.hpp"
#include "tune/strategies.hpp"

namespace kforge::strategies {
namespace {

class MapElites final : public Strategy {
 public:
  MapElites(const Space& s, std::uint64_t seed, const StrategyOptions& o)
      : Strategy(s, seed), init_(std::clamp(o.budget / 10, 5, 20)) {
    if (!o.descriptors.empty()) {
      if (o.descriptors.size() != 2)
        throw UsageError("MAP-Elites needs two descriptor parameters, got " +
                         std::to_string(o.descriptors.size()));
      for (int k = 0; k < 2; ++k) {
        desc_[k] = s.param_index(o.descriptors[k]);
        if (desc_[k] < 0) throw UsageError("MAP-Elites descriptor '" + o.descriptors[k] + "' is not a parameter");
      }
    } else {
      // The two parameters with the most values (ties: the earlier one).
      std::vector<int> order(s.dims());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return s.params()[a].labels.size() > s.params()[b].labels.size();
      });
      desc_[0] = order.size() > 0 ? order[0] : -1;
      desc_[1] = order.size() > 1 ? order[1] : -1;
    }
  }
  std::string name() const override { return "mapelites"; }

  nlohmann::json report() const override {
    nlohmann::json j;
    j["descriptors"] = nlohmann::json::array();
    for (int d : desc_)
      if (d >= 0) j["descriptors"].push_back(space_.params()[d].name);
    j["cells"] = nlohmann::json::array();
    for (const auto& [cell, e] : archive_) {
      nlohmann::json c{{"objective", e.cost}, {"config", space_.label(e.config)}};
      for (int k = 0; k < 2; ++k)
        if (desc_[k] >= 0) c[space_.params()[desc_[k]].name] = space_.params()[desc_[k]].labels[cell[k]];
      j["cells"].push_back(c);
    }
    return j;
  }

 protected:
  std::optional<Config> propose() override {
    if (static_cast<int>(tried_count()) < init_ || archive_.empty()) return random_untried();
    for (int t = 0; t < 10; ++t) {
      auto it = archive_.begin();
      std::advance(it, static_cast<long>(rng_.below(archive_.size())));
      const int moves = 1 + static_cast<int>(rng_.below(3));
      if (auto c = mutate(it->second.config, moves, 0.5, 6)) return c;
    }
    return random_untried();
  }

  void observe(const Config& c, std::optional<double> f) override {
    if (!f) return;
    const std::array<int, 2> cell{desc_[0] >= 0 ? c[desc_[0]] : 0, desc_[1] >= 0 ? c[desc_[1]] : 0};
    auto it = archive_.find(cell);
    if (it == archive_.end() || *f < it->second.cost) archive_[cell] = {c, *f};
  }

 private:
  struct Elite {
    Config config;
    double cost;
  };
  int init_;
  std::array<int, 2> desc_{-1, -1};
  std::map<std::array<int, 2>, Elite> archive_;
};

}  // namespace

std::unique_ptr<Strategy> mapelites(const Space& s, std::uint64_t seed, const StrategyOptions& o) {
  return std::make_unique<MapElites>(s, seed, o);
}

}  // namespace kforge::strategies
