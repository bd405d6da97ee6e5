// The ask/tell guard shared by every strategy, the factory, and the two plain strategies:
// brute force (every configuration in enumeration order) and random sampling without repeats.
#include "kforge/strategy.hpp"

#include "kforge/error.hpp"
#include "tune/strategies.hpp"

namespace kforge {

std::optional<Config> Strategy::ask() {
  if (tried_.size() >= space_.size()) return std::nullopt;
  std::optional<Config> c = propose();
  if (!c || !fresh(*c)) {
    if (c) ++replaced_;
    c = random_untried();
  }
  if (c) tried_.insert(*space_.rank(*c));
  return c;
}

void Strategy::tell(const Config& c, std::optional<double> objective) {
  const auto r = space_.rank(c);
  if (r) tried_.insert(*r);
  history_.push_back({c, objective});
  if (objective && (best_ < 0 || *objective < *history_[best_].objective))
    best_ = static_cast<int>(history_.size()) - 1;
  observe(c, objective);
}

void Strategy::reserve(const Config& c) {
  if (const auto r = space_.rank(c)) tried_.insert(*r);
}

bool Strategy::tried(const Config& c) const {
  const auto r = space_.rank(c);
  return r && tried_.count(*r);
}

std::optional<Config> Strategy::random_untried() {
  const std::uint64_t n = space_.size();
  if (tried_.size() >= n) return std::nullopt;
  if (tried_.size() * 2 < n)
    for (int i = 0; i < 64; ++i) {
      Config c = space_.sample(rng_);
      if (!tried(c)) return c;
    }
  // Mostly tried: walk from a random rank to the next untried one.
  std::uint64_t r = rng_.below(n);
  while (tried_.count(r)) r = (r + 1) % n;
  return space_.at(r);
}

std::optional<Config> Strategy::mutate(const Config& c, int moves, double p_adjacent, int tries) {
  if (space_.dims() == 0) return std::nullopt;
  for (int t = 0; t < tries; ++t) {
    Config x = c;
    for (int m = 0; m < moves; ++m) {
      const std::size_t d = rng_.below(space_.dims());
      const int n = static_cast<int>(space_.params()[d].labels.size());
      if (n < 2) continue;
      if (rng_.unit() < p_adjacent) {
        const int v = x[d] + (rng_.below(2) ? 1 : -1);
        x[d] = v < 0 ? 1 : v >= n ? n - 2 : v;
      } else {
        const int v = static_cast<int>(rng_.below(n - 1));
        x[d] = v >= x[d] ? v + 1 : v;
      }
    }
    if (fresh(x)) return x;
  }
  return std::nullopt;
}

namespace strategies {
namespace {

class Brute final : public Strategy {
 public:
  using Strategy::Strategy;
  std::string name() const override { return "brute"; }

 protected:
  std::optional<Config> propose() override {
    while (next_ < space_.size()) {
      Config c = space_.at(next_++);
      if (!tried(c)) return c;
    }
    return std::nullopt;
  }
  void observe(const Config&, std::optional<double>) override {}

 private:
  std::uint64_t next_ = 0;
};

class Random final : public Strategy {
 public:
  using Strategy::Strategy;
  std::string name() const override { return "random"; }

 protected:
  std::optional<Config> propose() override { return random_untried(); }
  void observe(const Config&, std::optional<double>) override {}
};

}  // namespace

std::unique_ptr<Strategy> brute(const Space& s, std::uint64_t seed, const StrategyOptions&) {
  return std::make_unique<Brute>(s, seed);
}
std::unique_ptr<Strategy> random(const Space& s, std::uint64_t seed, const StrategyOptions&) {
  return std::make_unique<Random>(s, seed);
}

}  // namespace strategies

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names{"brute", "random", "anneal", "genetic", "mapelites", "bayes"};
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const Space& space,
                                        std::uint64_t seed, const StrategyOptions& o) {
  using Factory = std::unique_ptr<Strategy> (*)(const Space&, std::uint64_t, const StrategyOptions&);
  static const std::pair<const char*, Factory> table[] = {
      {"brute", strategies::brute},     {"random", strategies::random},
      {"anneal", strategies::anneal},   {"genetic", strategies::genetic},
      {"mapelites", strategies::mapelites}, {"bayes", strategies::bayes}};
  if (o.prior && name != "bayes")
    throw UsageError("a prior (--prior) guides the bayes strategy only, not '" + name + "': use --strategy bayes");
  for (const auto& [n, f] : table)
    if (name == n) return f(space, seed, o);
  throw UsageError("unknown strategy '" + name +
                   "': use brute, random, anneal, genetic, mapelites or bayes");
}

}  // namespace kforge
