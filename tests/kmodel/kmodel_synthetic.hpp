#pragma once
// Random labelled data for the kernel model tests: odd sizes, seeded, nothing hard-coded.
#include <random>

#include "kforge/kmodel.hpp"

namespace kforge::kmodel::test {

// Two Gaussian blobs at +-`separation` along every axis, labels -1/+1; a fraction `flip` of the
// labels flipped (noise, so the classes overlap and the loss is active everywhere).
inline Dataset blobs(int n, int d, double separation, double flip, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> unit(0, 1);
  Dataset out{Eigen::MatrixXd(n, d), Eigen::VectorXd(n)};
  for (int i = 0; i < n; ++i) {
    const double label = i % 2 == 0 ? 1 : -1;
    for (int j = 0; j < d; ++j) out.x(i, j) = label * separation + normal(rng);
    out.y[i] = unit(rng) < flip ? -label : label;
  }
  if ((out.y.array() > 0).all() || (out.y.array() < 0).all()) out.y[0] = -out.y[0];
  return out;
}

}  // namespace kforge::kmodel::test
