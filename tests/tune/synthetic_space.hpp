#pragma once
// Synthetic spaces for strategy tests: `dims` parameters of `values` values each, the members
// those a predicate keeps, and a smooth objective with its minimum inside.
#include <cmath>
#include <functional>
#include <string>

#include "kforge/space.hpp"

namespace kforge::test {

inline Space synthetic_space(int dims, int values, const std::function<bool(const Config&)>& keep) {
  std::vector<SpaceParam> params;
  for (int d = 0; d < dims; ++d) {
    SpaceParam p{"P" + std::to_string(d), {}, {}};
    for (int v = 0; v < values; ++v) {
      p.labels.push_back(std::to_string(v));
      p.numbers.push_back(v);
    }
    params.push_back(p);
  }
  std::vector<Config> members;
  Config c(dims, 0);
  for (;;) {
    if (keep(c)) members.push_back(c);
    int d = dims;
    while (d > 0 && ++c[d - 1] == values) c[--d] = 0;
    if (d == 0) break;
  }
  return Space::from_members(params, members);
}

// A smooth bowl with an interaction term, minimum 1.0 near (0.3, 0.7, 0.5, ...) in
// normalized coordinates, like the runtime of a tile size sweep.
inline double smooth_objective(const Space& s, const Config& c) {
  const std::vector<double> x = s.normalized(c);
  double f = 1.0;
  for (std::size_t d = 0; d < x.size(); ++d) {
    const double centre = d == 0 ? 0.3 : d == 1 ? 0.7 : 0.5;
    f += (1.0 + d) * (x[d] - centre) * (x[d] - centre);
  }
  if (x.size() > 1) f += 0.5 * std::sin(3 * x[0]) * x[1];
  return f;
}

}  // namespace kforge::test
