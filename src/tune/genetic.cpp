// Genetic algorithm, (mu + lambda): a random first generation; then each child comes from two
// parents picked by binary tournament, uniform crossover and a mutation of one or two genes;
// after each generation the best `population` of parents and children survive. A failed
// configuration has infinite cost, so it never survives.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tune/strategies.hpp"

namespace kforge::strategies {
namespace {

class Genetic final : public Strategy {
 public:
  Genetic(const Space& s, std::uint64_t seed, const StrategyOptions& o)
      : Strategy(s, seed), size_(std::clamp(o.budget / 5, 6, 20)) {}
  std::string name() const override { return "genetic"; }

 protected:
  std::optional<Config> propose() override {
    if (parents_.size() < 2) return random_untried();
    for (int t = 0; t < 20; ++t) {
      const Config& a = tournament();
      const Config& b = tournament();
      Config child = a;
      for (std::size_t d = 0; d < child.size(); ++d)
        if (rng_.below(2)) child[d] = b[d];
      const int moves = rng_.unit() < 0.7 ? 1 : 2;
      if (auto m = mutate(child, moves, 0.5, 8)) return m;
      if (fresh(child)) return child;
    }
    return random_untried();
  }

  void observe(const Config& c, std::optional<double> f) override {
    children_.push_back({c, f.value_or(std::numeric_limits<double>::infinity())});
    if (static_cast<int>(children_.size()) < size_) return;
    // Next generation: the best of parents and children.
    parents_.insert(parents_.end(), children_.begin(), children_.end());
    children_.clear();
    std::stable_sort(parents_.begin(), parents_.end(),
                     [](const Member& x, const Member& y) { return x.cost < y.cost; });
    if (static_cast<int>(parents_.size()) > size_) parents_.resize(size_);
    while (!parents_.empty() && !std::isfinite(parents_.back().cost)) parents_.pop_back();
  }

 private:
  struct Member {
    Config config;
    double cost;
  };
  const Config& tournament() {
    const Member& x = parents_[rng_.below(parents_.size())];
    const Member& y = parents_[rng_.below(parents_.size())];
    return (x.cost <= y.cost ? x : y).config;
  }

  int size_;
  std::vector<Member> parents_, children_;
};

}  // namespace

std::unique_ptr<Strategy> genetic(const Space& s, std::uint64_t seed, const StrategyOptions& o) {
  return std::make_unique<Genetic>(s, seed, o);
}

}  // namespace kforge::strategies
