#pragma once
// Search strategies behind one ask/tell interface. A strategy is built over a Space (which must
// outlive it) and a seed; ask() returns the next configuration to evaluate, tell() reports its
// objective (lower is better; none for a failed or invalid evaluation).
//
// Guarantees, enforced here for every strategy: ask() never returns an invalid configuration
// nor one already asked or told; it returns none once the whole space has been tried; the
// same seed and the same tells give the same sequence.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/space.hpp"

namespace kforge {

struct StrategyOptions {
  int budget = 100;  // evaluations expected: annealing cools and populations size over it
  // MAP-Elites: the two parameters whose values index the archive (default: the two with the
  // most values).
  std::vector<std::string> descriptors;
  // Bayesian optimization: ei, pi, lcb, or portfolio (a bandit over the three).
  std::string acquisition = "ei";
  // Bayesian optimization: a prior, the predicted log(objective) of every configuration of the
  // space by rank (e.g. a PerfModel's predict_space). The initial design takes the best-predicted
  // configurations, the Gaussian process models what the prior gets wrong (the prior is its
  // mean), and the candidates always include the best-predicted untried ones.
  std::function<std::vector<double>(const Space&)> prior;
};

struct Observation {
  Config config;
  std::optional<double> objective;  // none: failed
};

class Strategy {
 public:
  Strategy(const Space& space, std::uint64_t seed) : space_(space), rng_(seed) {}
  virtual ~Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  std::optional<Config> ask();
  // May report a configuration the strategy did not ask for (e.g. the kernel's default).
  void tell(const Config& c, std::optional<double> objective);
  // A configuration being evaluated that the strategy did not ask for (the kernel's default,
  // in flight on another rank): ask() never returns it, just as after its tell().
  void reserve(const Config& c);

  [[nodiscard]] virtual std::string name() const = 0;
  // What the strategy learned, for reports (MAP-Elites: its archive).
  [[nodiscard]] virtual nlohmann::json report() const { return nlohmann::json::object(); }
  [[nodiscard]] const Space& space() const { return space_; }
  [[nodiscard]] const std::vector<Observation>& history() const { return history_; }
  // How many proposals the guard replaced because they were invalid or already tried.
  [[nodiscard]] int replaced() const { return replaced_; }

 protected:
  // The strategy's own proposal; the guard in ask() replaces an invalid or repeated one by a
  // random untried configuration. Return none to let the guard pick at random.
  virtual std::optional<Config> propose() = 0;
  virtual void observe(const Config& c, std::optional<double> objective) = 0;

  [[nodiscard]] bool tried(const Config& c) const;
  [[nodiscard]] bool fresh(const Config& c) const { return space_.contains(c) && !tried(c); }
  [[nodiscard]] std::uint64_t tried_count() const { return tried_.size(); }
  std::optional<Config> random_untried();
  // A random move: one parameter to an adjacent value (probability `p_adjacent`) or any value;
  // up to `tries` attempts at a valid, untried result.
  std::optional<Config> mutate(const Config& c, int moves, double p_adjacent = 0.5, int tries = 40);
  // Index of the best observation so far, -1 if none passed.
  [[nodiscard]] int best_index() const { return best_; }

  const Space& space_;
  SearchRng rng_;

 private:
  std::unordered_set<std::uint64_t> tried_;  // ranks asked or told
  std::vector<Observation> history_;
  int best_ = -1, replaced_ = 0;
};

// brute | random | anneal | genetic | mapelites | bayes. Throws UsageError on another name.
[[nodiscard]] std::unique_ptr<Strategy> make_strategy(const std::string& name, const Space& space,
                                                      std::uint64_t seed,
                                                      const StrategyOptions& o = {});
[[nodiscard]] const std::vector<std::string>& strategy_names();

}  // namespace kforge
