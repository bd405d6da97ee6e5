#pragma once
// Private: one factory per strategy, each in its own file; make_strategy() picks by name.
#include <memory>

#include "kforge/strategy.hpp"

namespace kforge::strategies {

std::unique_ptr<Strategy> brute(const Space& s, std::uint64_t seed, const StrategyOptions& o);
std::unique_ptr<Strategy> random(const Space& s, std::uint64_t seed, const StrategyOptions& o);
std::unique_ptr<Strategy> anneal(const Space& s, std::uint64_t seed, const StrategyOptions& o);
std::unique_ptr<Strategy> genetic(const Space& s, std::uint64_t seed, const StrategyOptions& o);
std::unique_ptr<Strategy> mapelites(const Space& s, std::uint64_t seed, const StrategyOptions& o);
std::unique_ptr<Strategy> bayes(const Space& s, std::uint64_t seed, const StrategyOptions& o);

}  // namespace kforge::strategies
