// What a tuner minimizes: time, energy or their product (the energy-delay product, which
// weighs a slower but thriftier configuration against a faster, hungrier one).
#include "kforge/error.hpp"
#include "kforge/tune.hpp"
#include "kforge/util.hpp"

namespace kforge {

const std::vector<std::string>& objective_names() {
  static const std::vector<std::string> names = {"time", "energy", "edp"};
  return names;
}

void check_objective(const std::string& objective) {
  for (const auto& n : objective_names())
    if (n == objective) return;
  throw UsageError("unknown objective '" + objective + "': use time, energy or edp");
}

std::optional<double> objective_value(const EvalResult& e, const std::string& objective) {
  if (!e.timing || e.timing->median_s <= 0) return std::nullopt;
  const double t = e.timing->median_s;
  if (objective == "time") return t;
  if (!e.energy) return std::nullopt;
  if (objective == "energy") return e.energy->joules;
  if (objective == "edp") return e.energy->joules * t;
  check_objective(objective);
  return std::nullopt;
}

}  // namespace kforge
