// Simulated annealing: a walk over the neighbourhood (one parameter moved, usually to an
// adjacent value) that accepts a worse configuration with probability exp(-relative loss / T),
// T cooling geometrically over the budget; after a run of moves without a new best it restarts
// from the best configuration found (or, every other time, from a random one).
#include <cmath>

#include "tune/strategies.hpp"

namespace kforge::strategies {
namespace {

class Anneal final : public Strategy {
 public:
  Anneal(const Space& s, std::uint64_t seed, const StrategyOptions& o)
      : Strategy(s, seed), budget_(std::max(1, o.budget)),
        patience_(std::max<int>(10, 2 * static_cast<int>(s.dims()))) {}
  std::string name() const override { return "anneal"; }

 protected:
  std::optional<Config> propose() override {
    if (!current_) return random_untried();
    // Mostly one move, sometimes two, so a walk can step over a hole in the valid space.
    const int moves = rng_.unit() < 0.8 ? 1 : 2;
    if (auto c = mutate(*current_, moves, 0.7)) return c;
    for (const Config& c : space_.neighbours(*current_, Neighbourhood::hamming))
      if (!tried(c)) return c;
    current_.reset();  // a dead end: every neighbour is tried
    return random_untried();
  }

  void observe(const Config& c, std::optional<double> f) override {
    ++steps_;
    if (!f) { ++stale_; return restart_if_stale(); }
    if (!best_ || *f < *best_) { best_ = f; best_config_ = c; stale_ = 0; }
    else ++stale_;
    if (!current_ || *f <= current_f_) return accept(c, *f);
    const double progress = std::min(1.0, static_cast<double>(steps_) / budget_);
    const double t = kT0 * std::pow(kT1 / kT0, progress);
    const double loss = (*f - current_f_) / std::max(current_f_, 1e-300);
    if (rng_.unit() < std::exp(-loss / t)) accept(c, *f);
    restart_if_stale();
  }

 private:
  static constexpr double kT0 = 0.5, kT1 = 0.005;  // temperatures, in relative loss
  void accept(const Config& c, double f) { current_ = c; current_f_ = f; }
  void restart_if_stale() {
    if (stale_ < patience_) return;
    stale_ = 0;
    if (++restarts_ % 2 == 1 && best_config_) accept(*best_config_, *best_);
    else current_.reset();
  }

  int budget_, patience_, steps_ = 0, stale_ = 0, restarts_ = 0;
  std::optional<Config> current_, best_config_;
  double current_f_ = 0;
  std::optional<double> best_;
};

}  // namespace

std::unique_ptr<Strategy> anneal(const Space& s, std::uint64_t seed, const StrategyOptions& o) {
  return std::make_unique<Anneal>(s, seed, o);
}

}  // namespace kforge::strategies
